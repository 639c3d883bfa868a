package playground

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/device"
	"github.com/miniapp-host/miniapp-host/launchprofile"
)

// SetDevice shows the launched Miniapp as cmd's device (docs/playground.md,
// "Devices"): the launcher's device bar, POST /api/device and the
// automation channel's device.set.
func (p *Playground) SetDevice(ctx context.Context, cmd bridge.DeviceCommand) (bridge.DeviceResult, error) {
	dc, ok := p.cfg.Opener.(bridge.DeviceController)
	if !ok {
		return bridge.DeviceResult{}, ErrNoWindow
	}
	return dc.SetDevice(ctx, cmd)
}

// Profiles reads the launch profiles file (Config.Profiles): the usable
// ones and what is wrong with the others.
func (p *Playground) Profiles() (*launchprofile.File, error) {
	return launchprofile.Load(p.cfg.Profiles)
}

// LaunchProfile launches the saved launch profile name: its device first,
// then the Miniapp, on its start path, signing in as its subject. A
// profile of a folder is `miniapp-host dev --profile`'s.
func (p *Playground) LaunchProfile(ctx context.Context, name string) (*LaunchResult, error) {
	f, err := p.Profiles()
	if err != nil {
		return nil, err
	}
	prof, err := f.Get(name)
	if err != nil {
		return nil, err
	}
	origin, id := prof.Origin, prof.ID
	if prof.Dir != "" {
		p.mu.Lock()
		dev := p.dev
		p.mu.Unlock()
		if dev == nil {
			return nil, fmt.Errorf("playground: launch profile %s runs the folder %s: start it with `miniapp-host dev --profile %s`", name, prof.Dir, name)
		}
		origin, id = dev.Origin, dev.ID
	}
	if prof.Subject != "" {
		if err := p.checkSubject(prof.Subject); err != nil {
			return nil, fmt.Errorf("playground: launch profile %s: subject: %w", name, err)
		}
	}
	if p.cfg.Opener != nil {
		if _, err := p.SetDevice(ctx, bridge.DeviceCommand{Device: prof.Device, Landscape: prof.Landscape, Theme: prof.Theme, Locale: prof.Locale}); err != nil &&
			!errors.Is(err, ErrNoWindow) {
			return nil, err
		}
	}
	o := launchOptions{subject: prof.Subject, start: prof.Start}
	if cond, err := prof.Conditions(); err != nil {
		return nil, fmt.Errorf("playground: launch profile %s: %w", name, err)
	} else if !cond.IsZero() {
		o.network = &cond
	}
	return p.launch(ctx, origin, id, o)
}

// SetNetwork sets the launched Miniapp's network conditions (the
// automation channel's network.set and network.clear): the window's
// Opener must implement bridge.NetworkController.
func (p *Playground) SetNetwork(ctx context.Context, cmd bridge.NetworkCommand) (bridge.NetworkResult, error) {
	nc, ok := p.cfg.Opener.(bridge.NetworkController)
	if !ok {
		return bridge.NetworkResult{}, ErrNoWindow
	}
	return nc.SetNetwork(ctx, cmd)
}

// checkSubject says whether id is a seeded subject.
func (p *Playground) checkSubject(id string) error {
	for _, s := range p.world.subjects {
		if s.ID == id {
			return nil
		}
	}
	return fmt.Errorf("no seeded subject %q", id)
}

// DeviceReporter is the optional ability of an Opener to say which device
// it shows the Miniapp as now, for the launcher's device bar.
type DeviceReporter interface {
	CurrentDevice() bridge.DeviceCommand
}

func (p *Playground) handleDevices(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"presets": device.Presets()}
	if dr, ok := p.cfg.Opener.(DeviceReporter); ok {
		out["current"] = dr.CurrentDevice()
	}
	writeJSON(w, http.StatusOK, out)
}

func (p *Playground) handleSetDevice(w http.ResponseWriter, r *http.Request) {
	var in bridge.DeviceCommand
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	res, err := p.SetDevice(r.Context(), in)
	var be *bridge.Error
	switch {
	case errors.Is(err, ErrNoWindow):
		writeError(w, errNoWindowAPI)
	case errors.As(err, &be) && be.Code == bridge.CodeInvalidParams:
		writeError(w, invalid(be.Message))
	case err != nil:
		writeError(w, &apiError{http.StatusBadGateway, "device_failed", err.Error()})
	default:
		writeJSON(w, http.StatusOK, res)
	}
}

func (p *Playground) handleProfiles(w http.ResponseWriter, r *http.Request) {
	f, err := p.Profiles()
	out := struct {
		File     string                  `json:"file"`
		Profiles []launchprofile.Profile `json:"profiles"`
		Problems []string                `json:"problems"`
	}{File: p.cfg.Profiles, Profiles: []launchprofile.Profile{}, Problems: []string{}}
	if err != nil {
		out.Problems = append(out.Problems, err.Error())
	} else {
		out.Profiles = append(out.Profiles, f.Profiles...)
		for _, e := range f.Problems {
			out.Problems = append(out.Problems, e.Error())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (p *Playground) handleSaveProfile(w http.ResponseWriter, r *http.Request) {
	var in launchprofile.Profile
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	f, err := p.Profiles()
	if err == nil {
		err = f.Put(in)
	}
	if err != nil {
		writeError(w, invalid(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "Saved launch profile " + in.Name + " in " + p.cfg.Profiles + "."})
}

func (p *Playground) handleDeleteProfile(w http.ResponseWriter, r *http.Request) {
	f, err := p.Profiles()
	if err == nil {
		err = f.Delete(r.PathValue("name"))
	}
	if err != nil {
		writeError(w, invalid(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "Deleted launch profile " + r.PathValue("name") + "."})
}

func (p *Playground) handleLaunchProfile(w http.ResponseWriter, r *http.Request) {
	// The body is {}: the profile is all there is to it.
	var in struct{}
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	res, err := p.LaunchProfile(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, invalid(err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, res)
}
