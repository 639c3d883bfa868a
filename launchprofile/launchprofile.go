// Package launchprofile keeps a user's saved launches (docs/playground.md,
// "Launch profiles"): which Miniapp (its origin and id, or a folder that
// `miniapp-host dev` serves), the page it starts on, who signs in, and the
// device, orientation, theme and locale it is shown with. One type, read
// and written in this one place, and taken by every way to launch: the
// launcher, `open --profile`, `dev --profile`, the automation channel's
// launch and the WebDriver capability.
//
// The profiles are one JSON file per user, $XDG_CONFIG_HOME/miniapp-host/
// profiles.json (~/.config/...), written mode 0600, whole or not at all,
// and never read or written through a symbolic link (package privatefile).
// A profile that cannot be used (an unknown member, a device that does not
// exist, a locale that is no BCP 47 tag) is reported with its name and the
// field, and kept in the file as it was: one bad profile never hides the
// others nor stops the playground from starting.
package launchprofile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/device"
	"github.com/miniapp-host/miniapp-host/netshape"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/privatefile"
	"github.com/miniapp-host/miniapp-host/strictjson"
)

// Profile is one saved launch.
type Profile struct {
	// Name is how the profile is named: 1 to 64 letters, digits, '.',
	// '_' or '-'.
	Name string `json:"name"`
	// Origin and ID name a published Miniapp; Dir a folder `dev` serves
	// instead (then Origin is empty).
	Origin string `json:"origin,omitempty"`
	ID     string `json:"id,omitempty"`
	Dir    string `json:"dir,omitempty"`
	// Start is the path and query the Miniapp starts on, on its own
	// origin ("/orders?tab=open"); "" is its start_url.
	Start string `json:"start,omitempty"`
	// Subject signs in on the consent screen; "" keeps the playground's.
	Subject string `json:"subject,omitempty"`
	// Device, Landscape, Theme and Locale are the emulation
	// (device.Options).
	Device    string `json:"device,omitempty"`
	Landscape bool   `json:"landscape,omitempty"`
	Theme     string `json:"theme,omitempty"`
	Locale    string `json:"locale,omitempty"`
	// Network and Mocks are the launch's network conditions for the
	// Miniapp's view (docs/playground.md, "Network conditions and
	// mocks"): a throttle as `--network` takes it ("slow-3g",
	// "300ms/400/400") and mock rules as a rules file's "rules". Both
	// optional: a file written before they existed reads as it did.
	Network string          `json:"network,omitempty"`
	Mocks   []netshape.Rule `json:"mocks,omitempty"`
}

// Conditions is p's network conditions (Network and Mocks); an error is
// what Validate reports.
func (p Profile) Conditions() (netshape.Conditions, error) {
	t, err := netshape.ParseThrottle(p.Network)
	if err != nil {
		return netshape.Conditions{}, err
	}
	c := netshape.Conditions{Throttle: t, Mocks: append([]netshape.Rule(nil), p.Mocks...)}
	if err := netshape.Compile(c.Mocks); err != nil {
		return netshape.Conditions{}, err
	}
	return c, nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// FieldError is what is wrong with one profile: which one, which field,
// and how to fix it.
type FieldError struct {
	// Profile is the profile's name, or "#N" (its place, from 1) when it
	// has no usable name.
	Profile string
	Field   string
	Rule    string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("launch profile %s: %s: %s", e.Profile, e.Field, e.Rule)
}

// Emulation is p's device emulation.
func (p Profile) Emulation() (device.Emulation, error) {
	return device.Options{Device: p.Device, Landscape: p.Landscape, Theme: p.Theme, Locale: p.Locale}.Emulation()
}

// Validate checks p; the error is a *FieldError.
func (p Profile) Validate() error {
	if err := p.checkTarget(); err != nil {
		return err
	}
	if p.Start != "" {
		if err := checkStart(p.Start); err != nil {
			return p.bad("start", err.Error())
		}
	}
	return p.checkConditions()
}

// bad is a *FieldError of p, naming it as written when it is no name.
func (p Profile) bad(field, rule string) error {
	name := p.Name
	if !nameRE.MatchString(name) {
		name = fmt.Sprintf("%q", name)
	}
	return &FieldError{Profile: name, Field: field, Rule: rule}
}

// checkTarget checks p's name and what it launches: a folder, or a
// published Miniapp's origin and id.
func (p Profile) checkTarget() error {
	switch {
	case !nameRE.MatchString(p.Name):
		return p.bad("name", "use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	case p.Dir != "" && (p.Origin != "" || p.ID != ""):
		return p.bad("dir", "a profile launches either a folder (dir) or a published Miniapp (origin and id), not both")
	case p.Dir == "" && (p.Origin == "" || p.ID == ""):
		return p.bad("origin", "give the Miniapp's origin and id (or dir, a folder for miniapp-host dev)")
	}
	if p.Origin != "" {
		o, err := origin.OfString(p.Origin)
		if err != nil || o.IsOpaque() || o.String() != strings.TrimSuffix(p.Origin, "/") {
			return p.bad("origin", fmt.Sprintf("%q is not an origin: write scheme://host[:port], e.g. http://127.0.0.1:8701", p.Origin))
		}
	}
	return nil
}

// checkConditions checks the conditions p launches in: the device
// emulation, the network throttle and the mock rules.
func (p Profile) checkConditions() error {
	if _, err := p.Emulation(); err != nil {
		field := "device"
		switch {
		case strings.Contains(err.Error(), "theme"):
			field = "theme"
		case strings.Contains(err.Error(), "locale"):
			field = "locale"
		}
		return p.bad(field, strings.TrimPrefix(err.Error(), "device: "))
	}
	if _, err := netshape.ParseThrottle(p.Network); err != nil {
		return p.bad("network", err.Error())
	}
	if err := netshape.Compile(append([]netshape.Rule(nil), p.Mocks...)); err != nil {
		var re *netshape.RuleError
		if errors.As(err, &re) {
			return p.bad(strings.TrimPrefix(re.Pointer, "/"), re.Msg)
		}
		return p.bad("mocks", err.Error())
	}
	return nil
}

// checkStart checks a start path: a path and query on the Miniapp's own
// origin, never another site.
func checkStart(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
		return fmt.Errorf("%q is not a path on the Miniapp's origin: write /path?query (it starts with one /)", s)
	}
	return nil
}

// CheckStart is checkStart for the command line's --start.
func CheckStart(s string) error { return checkStart(s) }

// File is the profiles file as it was read: the profiles that can be used,
// in order, and what is wrong with the others, which Save writes back as
// they were.
type File struct {
	Path     string
	Profiles []Profile
	// Problems are the profiles that cannot be used, each a *FieldError
	// (or a syntax error of the whole file).
	Problems []error
	// entries are every entry of the file, usable or not, in order.
	entries []entry
	// unreadable is set when the file is no profiles file at all: it is
	// never overwritten.
	unreadable bool
}

// entry is one entry of the file: a usable profile (its name), or one
// that cannot be used, as it was in the file.
type entry struct {
	raw  json.RawMessage
	name string
}

// DefaultPath is the user's profiles file: $XDG_CONFIG_HOME/miniapp-host/
// profiles.json, else ~/.config/miniapp-host/profiles.json; "" when there
// is no home.
func DefaultPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "miniapp-host", "profiles.json")
}

// maxFile bounds the profiles file.
const maxFile = 1 << 20

// Load reads the profiles at path; a missing file has none. It returns an
// error only when the file cannot be read at all (a link, not a regular
// file, unreadable): a file that is no JSON, or profiles that cannot be
// used, are in File.Problems, and the usable ones are kept.
func Load(path string) (*File, error) {
	f := &File{Path: path}
	b, err := privatefile.Read(path, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("launchprofile: %w", err)
	}
	var doc struct {
		Profiles []json.RawMessage `json:"profiles"`
	}
	if err := strictjson.Unmarshal(b, &doc, strictjson.Limits{}); err != nil {
		f.Problems = append(f.Problems, fmt.Errorf("launch profiles: %s is not {\"profiles\": [...]}: %v; fix it, or move it away to start again (nothing in it is lost until you save a profile)", path, err))
		// What cannot be read is never overwritten: save refuses.
		f.unreadable = true
		return f, nil
	}
	seen := map[string]bool{}
	for i, raw := range doc.Profiles {
		var p Profile
		err := strictjson.Unmarshal(raw, &p, strictjson.Limits{})
		if err != nil {
			err = &FieldError{Profile: fmt.Sprintf("#%d", i+1), Field: "profile", Rule: err.Error() + " (the members are name, origin, id, dir, start, subject, device, landscape, theme, locale, network, mocks)"}
		} else if err = p.Validate(); err == nil && seen[p.Name] {
			err = &FieldError{Profile: p.Name, Field: "name", Rule: "another profile has this name: rename one"}
		}
		if err != nil {
			f.Problems = append(f.Problems, err)
			f.entries = append(f.entries, entry{raw: slices.Clone(raw)})
			continue
		}
		seen[p.Name] = true
		f.Profiles = append(f.Profiles, p)
		f.entries = append(f.entries, entry{name: p.Name})
	}
	return f, nil
}

// Get returns the profile named name.
func (f *File) Get(name string) (Profile, error) {
	for _, p := range f.Profiles {
		if p.Name == name {
			return p, nil
		}
	}
	for _, err := range f.Problems {
		if fe := (*FieldError)(nil); errors.As(err, &fe) && fe.Profile == name {
			return Profile{}, err
		}
	}
	names := make([]string, len(f.Profiles))
	for i, p := range f.Profiles {
		names[i] = p.Name
	}
	if len(names) == 0 {
		return Profile{}, fmt.Errorf("launch profile %q: %s has no profiles; save one from the launcher or with the automation channel's profile.save", name, f.Path)
	}
	return Profile{}, fmt.Errorf("launch profile %q: no such profile in %s (it has %s)", name, f.Path, strings.Join(names, ", "))
}

// Put adds p, or replaces the profile of the same name, and saves the
// file. The profiles that cannot be used stay as they were.
func (f *File) Put(p Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if i := slices.IndexFunc(f.Profiles, func(q Profile) bool { return q.Name == p.Name }); i >= 0 {
		f.Profiles[i] = p
		return f.save()
	}
	f.Profiles = append(f.Profiles, p)
	f.entries = append(f.entries, entry{name: p.Name})
	return f.save()
}

// Delete removes the profile named name and saves the file.
func (f *File) Delete(name string) error {
	idx := slices.IndexFunc(f.Profiles, func(p Profile) bool { return p.Name == name })
	if idx < 0 {
		_, err := f.Get(name)
		return err
	}
	f.Profiles = slices.Delete(f.Profiles, idx, idx+1)
	f.entries = slices.DeleteFunc(f.entries, func(e entry) bool { return e.raw == nil && e.name == name })
	return f.save()
}

// save writes every entry back, the unusable ones as they were read.
func (f *File) save() error {
	if f.unreadable {
		return fmt.Errorf("launch profiles: %s could not be read as profiles; it is left as it is: fix it or move it away first", f.Path)
	}
	if f.Path == "" {
		return errors.New("launch profiles: no file to keep them in (no home folder)")
	}
	var buf bytes.Buffer
	buf.WriteString("{\"profiles\": [")
	for i, e := range f.entries {
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString("\n  ")
		if e.raw != nil {
			buf.Write(bytes.TrimSpace(e.raw))
			continue
		}
		p, err := f.Get(e.name)
		if err != nil {
			return err
		}
		b, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("launch profiles: %w", err)
		}
		buf.Write(b)
	}
	buf.WriteString("\n]}\n")
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return fmt.Errorf("launch profiles: %w", err)
	}
	if err := privatefile.Write(f.Path, buf.Bytes()); err != nil {
		return fmt.Errorf("launch profiles: %w", err)
	}
	return nil
}
