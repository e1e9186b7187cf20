package prow

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A metadata key is lower case with dashes, as Prow's and kubetest2's own
// keys are, and is declared in this package only: a constant named Meta*
// with a string value anywhere else in the module is a second home, and so
// is a string key in a function that makes metadata.
func TestMetadataKeysHaveOneHome(t *testing.T) {
	spelling := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	root := filepath.Join("..", "..")
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	own := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return err
		}
		here := dir == self
		// A function that makes metadata (Metadata, metadata,
		// runMetadata) names its keys by the constants, never by a
		// string of its own.
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !strings.HasSuffix(strings.ToLower(fn.Name.Name), "metadata") {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				var key ast.Expr
				switch n := n.(type) {
				case *ast.KeyValueExpr:
					key = n.Key
				case *ast.IndexExpr:
					key = n.Index
				}
				if lit, ok := key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					t.Errorf("%s: %s writes the metadata key %s as a string: name it by its reports/prow constant", fset.Position(lit.Pos()), fn.Name.Name, lit.Value)
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Meta") || strings.HasPrefix(name.Name, "Metadata") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					value, _ := strconv.Unquote(lit.Value)
					if !here {
						t.Errorf("%s: metadata key %s = %q is declared outside reports/prow", fset.Position(name.Pos()), name.Name, value)
						continue
					}
					own++
					if !spelling.MatchString(value) {
						t.Errorf("%s: metadata key %s = %q: want lower case words joined by dashes", fset.Position(name.Pos()), name.Name, value)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if own < 20 {
		t.Errorf("found %d metadata keys in reports/prow, want the 20 and more it declares", own)
	}
}
