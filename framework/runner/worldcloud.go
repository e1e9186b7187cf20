package runner

// The world's cloud side: the profile's services and its cloud driver
// (framework/cloudside).

import (
	"context"
	"errors"

	"github.com/ccm-conformance/ccm-conformance/framework/clouddriver"
	"github.com/ccm-conformance/ccm-conformance/framework/cloudside"
	"github.com/ccm-conformance/ccm-conformance/framework/profile"
)

// blameDriver turns a setup error caused by the cloud driver breaking its
// protocol into a *DriverError, so that the run reads as the driver's
// failure.
func (w *world) blameDriver(err error) error {
	var de *clouddriver.Error
	if errors.As(err, &de) && de.Kind == clouddriver.KindProtocol {
		return &DriverError{Driver: de.Driver, Err: err}
	}
	return err
}

// startService starts a profile service (cloudside.StartService) and
// registers its stop.
func (w *world) startService(ctx context.Context, s profile.Service) error {
	svc, err := cloudside.StartService(ctx, w.profile, w.expander, s, w.logDir)
	if svc != nil {
		w.onTeardown("stop service "+s.Name, svc.Stop)
	}
	if err != nil {
		return &SetupError{Step: "service " + s.Name, Err: err}
	}
	if s.ReadyFile != "" {
		w.logf("service %s ready", s.Name)
	}
	return nil
}

// startDriver starts the profile's cloud driver and runs its handshake.
func (w *world) startDriver(ctx context.Context) error {
	if w.profile.CloudDriver == nil {
		return nil
	}
	in, err := cloudside.DriverInput(w.profile, w.expander)
	if err != nil {
		return &SetupError{Step: "cloud driver", Err: err}
	}
	if w.driver, err = clouddriver.New(ctx, in); err != nil {
		return &SetupError{Step: "cloud driver handshake", Err: err}
	}
	info := w.driver.Info()
	w.logf("cloud driver: provider %q, protocol %s, %d verbs", info.Provider, info.ProtocolVersion, len(info.Verbs))
	return nil
}

func (w *world) driverInfo() *clouddriver.Info {
	if w.driver == nil {
		return nil
	}
	info := w.driver.Info()
	return &info
}
