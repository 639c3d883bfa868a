package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/miniapp-host/miniapp-host/device"
	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/launchprofile"
	"github.com/miniapp-host/miniapp-host/netshape"
)

// deviceFlags are the flags that say how a launch shows its Miniapp
// (docs/playground.md, "Devices" and "Launch profiles"), shared by open,
// playground and dev.
type deviceFlags struct {
	fs                                    *flag.FlagSet
	device, theme, locale, start, profile *string
	network, mock                         *string
	landscape                             *bool
	zoom                                  *float64
}

func addDeviceFlags(fs *flag.FlagSet) *deviceFlags {
	return &deviceFlags{
		fs:        fs,
		device:    fs.String("device", "", "show the Miniapp as this device: a preset of `miniapp-host devices` (iphone-15, pixel-8, ...) or WIDTHxHEIGHT@DPR; default desktop"),
		landscape: fs.Bool("landscape", false, "turn the device to landscape"),
		theme:     fs.String("theme", "", "light or dark: the page's prefers-color-scheme and the host's theme colours (default light)"),
		locale:    fs.String("locale", "", "the page's language, a BCP 47 tag (de-CH): navigator.language, Accept-Language, Intl"),
		zoom:      fs.Float64("zoom", 0, "show the device at this zoom, 0.25 to 2 (default: fit it into the window)"),
		start:     fs.String("start", "", "the path and query the Miniapp starts on, on its origin (/orders?tab=open); default its start_url"),
		profile:   fs.String("profile", "", "launch as the saved launch profile NAME ("+profilesPathText()+"); other flags given change it"),
		network: fs.String("network", "", "the Miniapp view's network: offline, slow-3g, fast-3g (Chrome DevTools' figures), or LATENCY/DOWN/UP "+
			"(300ms/400/400: a latency, then kbit/s down and up, 0 unlimited); default none"),
		mock: fs.String("mock", "", "answer the Miniapp view's requests with the mock rules of FILE ({\"rules\": [{\"method\": \"GET\", \"url\": \"http://127.0.0.1:*/api/*\", \"status\": 503}]}; docs/playground.md, \"Network conditions and mocks\")"),
	}
}

// profilesPathText is where the profiles are, as the help says it.
func profilesPathText() string { return "$XDG_CONFIG_HOME/miniapp-host/profiles.json" }

// launch is what the flags say of a launch: the device, and what the
// profile named adds (origin, id, folder, start, subject).
type launch struct {
	device  host.DeviceSettings
	profile launchprofile.Profile
	start   string
	// network is the launch's network conditions: --network and --mock,
	// else the profile's.
	network netshape.Conditions
}

// read checks the flags and the profile they name; the error names the
// flag or the profile's field and how to fix it.
func (f *deviceFlags) read() (launch, error) {
	var l launch
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	opts := device.Options{Device: *f.device, Landscape: *f.landscape, Theme: *f.theme, Locale: *f.locale}
	l.start = *f.start
	if *f.profile != "" {
		if err := f.readProfile(&l, &opts, set); err != nil {
			return l, err
		}
	}
	em, err := opts.Emulation()
	if err != nil {
		return l, fmt.Errorf("--%s", flagOf(err))
	}
	if err := f.readNetwork(&l, set); err != nil {
		return l, err
	}
	if l.start != "" {
		if err := launchprofile.CheckStart(l.start); err != nil {
			return l, fmt.Errorf("--start: %v", err)
		}
	}
	l.device = host.DeviceSettings{Emulation: em, Zoom: *f.zoom}
	if z := *f.zoom; z != 0 && (z < 0.25 || z > 2) {
		return l, fmt.Errorf("--zoom %g: use 0.25 to 2, or leave it out to fit the device into the window", z)
	}
	return l, nil
}

// readProfile reads the profile --profile names into l, and its device
// options into opts where no flag (set) gives them.
func (f *deviceFlags) readProfile(l *launch, opts *device.Options, set map[string]bool) error {
	file, err := launchprofile.Load(launchprofile.DefaultPath())
	if err != nil {
		return err
	}
	p, err := file.Get(*f.profile)
	if err != nil {
		return err
	}
	l.profile = p
	if !set["device"] {
		opts.Device = p.Device
	}
	if !set["landscape"] {
		opts.Landscape = p.Landscape
	}
	if !set["theme"] {
		opts.Theme = p.Theme
	}
	if !set["locale"] {
		opts.Locale = p.Locale
	}
	if !set["start"] {
		l.start = p.Start
	}
	return nil
}

// readNetwork reads the launch's network conditions: the profile's, with
// --network and --mock (set: the flags given) in their place.
func (f *deviceFlags) readNetwork(l *launch, set map[string]bool) error {
	var err error
	if l.profile.Name != "" {
		if l.network, err = l.profile.Conditions(); err != nil {
			return fmt.Errorf("launch profile %s: %v", l.profile.Name, err)
		}
	}
	if set["network"] {
		if l.network.Throttle, err = netshape.ParseThrottle(*f.network); err != nil {
			return fmt.Errorf("--%v", err)
		}
	}
	if set["mock"] {
		if l.network.Mocks, err = readMocks(*f.mock); err != nil {
			return err
		}
	}
	return nil
}

// readMocks reads a mock rules file (--mock FILE).
func readMocks(path string) ([]netshape.Rule, error) {
	if path == "" {
		return nil, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--mock: %v", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, netshape.MaxFile+1))
	if err != nil {
		return nil, fmt.Errorf("--mock: %v", err)
	}
	if len(b) > netshape.MaxFile {
		return nil, fmt.Errorf("--mock %s: longer than %d bytes", path, netshape.MaxFile)
	}
	rules, err := netshape.ParseRulesFile(b)
	if err != nil {
		return nil, fmt.Errorf("--mock %s: %v", path, err)
	}
	return rules, nil
}

// flagOf names the flag an emulation error is about, with the error.
func flagOf(err error) string {
	msg := strings.TrimPrefix(err.Error(), "device: ")
	switch {
	case strings.HasPrefix(msg, "theme"):
		return "theme: " + msg
	case strings.HasPrefix(msg, "locale"):
		return "locale: " + msg
	}
	return "device: " + msg
}
