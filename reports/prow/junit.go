package prow

import "regexp"

// HarnessSuite is the pseudo-suite that holds what belongs to no suite: a
// failed suite-level node (BeforeSuite and the like) and the harness's own
// error (bad input, a failed setup step, an interrupt). Its junit file is
// written when it has a case, and always when no other junit file is, so
// that every run directory has at least one.
const HarnessSuite = "harness"

// unsafeSuiteChars are replaced in file names. TestGrid parses
// junit_<context>_<thread>.xml and a context cannot contain "_".
var unsafeSuiteChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// JUnitFileName is the junit file of a suite: junit_<suite>_01.xml.
func JUnitFileName(suite string) string {
	return "junit_" + unsafeSuiteChars.ReplaceAllString(suite, "-") + "_01.xml"
}
