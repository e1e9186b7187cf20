package cloud

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ccm-conformance/ccm-conformance/providers/aws/awsctl"
)

// ControlHandler serves the control channel (package awsctl).
func (c *Cloud) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+awsctl.PathInstances, func(w http.ResponseWriter, r *http.Request) {
		var req awsctl.CreateInstance
		if !decode(w, r, &req) {
			return
		}
		answer[awsctl.Instance](w)(c.CreateInstance(req))
	})
	mux.HandleFunc("POST "+awsctl.PathInstance, func(w http.ResponseWriter, r *http.Request) {
		var req awsctl.InstanceAction
		if !decode(w, r, &req) {
			return
		}
		answer[awsctl.Instance](w)(c.Act(req))
	})
	mux.HandleFunc("POST "+awsctl.PathFaults, func(w http.ResponseWriter, r *http.Request) {
		var req awsctl.Fault
		if !decode(w, r, &req) {
			return
		}
		answer[struct{}](w)(struct{}{}, c.SetFault(req.Target, req.ErrorRate))
	})
	mux.HandleFunc("DELETE "+awsctl.PathFaults, func(w http.ResponseWriter, r *http.Request) {
		c.ClearFaults()
		answer[struct{}](w)(struct{}{}, nil)
	})
	mux.HandleFunc("POST "+awsctl.PathCalls, func(w http.ResponseWriter, r *http.Request) {
		var req awsctl.CallsQuery
		if !decode(w, r, &req) {
			return
		}
		answer[awsctl.Calls](w)(c.Calls(req), nil)
	})
	return mux
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		http.Error(w, "malformed request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func answer[T any](w http.ResponseWriter) func(T, error) {
	return func(v T, err error) {
		switch {
		case errors.Is(err, ErrNoInstance):
			http.Error(w, err.Error(), awsctl.NotFoundStatus)
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(v)
		}
	}
}
