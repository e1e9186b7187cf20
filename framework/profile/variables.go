package profile

import (
	"fmt"
	"os"
	"regexp"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The variables a profile may use in paths, commands, args and env values,
// written ${NAME}.
const (
	// VarProfileDir is the directory of the profile file.
	VarProfileDir = "PROFILE_DIR"
	// VarRunDir is a private directory for this run, removed afterwards.
	VarRunDir = "RUN_DIR"
	// VarKubeconfig is the admin kubeconfig of the cluster under test.
	VarKubeconfig = "KUBECONFIG"
)

var variableRef = regexp.MustCompile(`\$\{([^}]*)\}`)

var knownVariables = map[string]bool{VarProfileDir: true, VarRunDir: true, VarKubeconfig: true}

func validateVariables(path *field.Path, values []string) field.ErrorList {
	var errs field.ErrorList
	for i, v := range values {
		p := path
		if len(values) > 1 {
			p = path.Index(i)
		}
		for _, m := range variableRef.FindAllStringSubmatch(v, -1) {
			if !knownVariables[m[1]] {
				names := make([]string, 0, len(knownVariables))
				for n := range knownVariables {
					names = append(names, "${"+n+"}")
				}
				sort.Strings(names)
				errs = append(errs, field.Invalid(p, v, fmt.Sprintf("unknown variable ${%s}; known: %v", m[1], names)))
			}
		}
	}
	return errs
}

// Expander substitutes profile variables.
type Expander map[string]string

// NewExpander returns the variables for one run.
func (p *Profile) NewExpander(runDir, kubeconfig string) Expander {
	return Expander{VarProfileDir: p.Dir, VarRunDir: runDir, VarKubeconfig: kubeconfig}
}

// Expand substitutes every ${NAME} in s. Validation has already rejected
// unknown names.
func (e Expander) Expand(s string) string {
	return variableRef.ReplaceAllStringFunc(s, func(ref string) string {
		return e[variableRef.FindStringSubmatch(ref)[1]]
	})
}

// ExpandAll substitutes variables in every element.
func (e Expander) ExpandAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = e.Expand(s)
	}
	return out
}

// Environ returns the harness's environment with env added, expanded.
func (e Expander) Environ(env map[string]string) []string {
	out := os.Environ()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+e.Expand(env[k]))
	}
	return out
}
