package framework

import "github.com/ccm-conformance/ccm-conformance/internal/echo/answer"

// EchoAnswer is what the echo server (cmd/echo-server, the backend pod of
// the data path specs on a real cluster) answers to every TCP connection,
// UDP datagram and HTTP GET /, one line:
//
//	echo pod=<pod> node=<node> client=<ip>
//
// pod and node are the answering pod's names (env POD_NAME and NODE_NAME),
// client the source IP it saw, without a port; an unknown value is "-",
// read back as "". Fields are taken in any order and unknown ones
// ignored. The format is defined once, in a leaf package that the server
// and the framework both import, so that neither links the other
// (docs/images.md, "The echo server").
type EchoAnswer = answer.Answer

// ParseEchoAnswer reads a line of the echo server, as Prober.TCP or Prober.UDP
// return it. It fails, quoting the line, on anything else: a line that
// does not start with "echo ", a field that is not key=value or is given
// twice, a missing pod, node or client, or a client that is not an IP.
func ParseEchoAnswer(line string) (EchoAnswer, error) {
	return answer.Parse(line)
}
