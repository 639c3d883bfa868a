package launchprofile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandEditedFile: a file a user edited by hand, with one good profile,
// one with a device that does not exist, one with a POSIX locale, one with
// a misspelt member and one without a name, loads the good one, names each
// bad one with its field and how to fix it, and keeps them all in the file
// when a profile is saved.
func TestHandEditedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.json")
	hand := `{"profiles": [
  {"name": "checkout-iphone", "origin": "http://127.0.0.1:8701", "id": "demo-public", "start": "/?tab=pay", "device": "iphone-15", "landscape": true, "theme": "dark", "locale": "de-CH"},
  {"name": "nokia", "origin": "http://127.0.0.1:8701", "id": "demo-public", "device": "nokia-3310"},
  {"name": "posix", "origin": "http://127.0.0.1:8701", "id": "demo-public", "locale": "de_CH.UTF-8"},
  {"name": "typo", "origin": "http://127.0.0.1:8701", "id": "demo-public", "devise": "pixel-8"},
  {"origin": "http://127.0.0.1:8701", "id": "demo-public"},
  {"name": "elsewhere", "origin": "http://127.0.0.1:8701", "id": "demo-public", "start": "https://evil.example/"}
]}
`
	if err := os.WriteFile(path, []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Profiles) != 1 || f.Profiles[0].Name != "checkout-iphone" {
		t.Fatalf("usable profiles %+v", f.Profiles)
	}
	var problems []string
	for _, p := range f.Problems {
		problems = append(problems, p.Error())
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{
		`launch profile nokia: device: unknown device "nokia-3310": use one of iphone-se`,
		`launch profile posix: locale: locale "de_CH.UTF-8" is a POSIX locale name, not a BCP 47 tag: write it as de-CH`,
		`launch profile #4: profile: json: unknown field "devise"`,
		`launch profile "": name: use 1 to 64 letters`,
		`launch profile elsewhere: start: "https://evil.example/" is not a path on the Miniapp's origin`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if _, err := f.Get("nokia"); err == nil || !strings.Contains(err.Error(), "device") {
		t.Errorf("Get of a bad profile: %v", err)
	}
	em, err := f.Profiles[0].Emulation()
	if err != nil || em.Viewport().Width != 852 || em.Locale != "de-CH" {
		t.Errorf("emulation %+v, %v", em, err)
	}

	if err := f.Put(Profile{Name: "pixel", Origin: "http://127.0.0.1:8702", ID: "demo-confidential", Device: "pixel-8"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	again, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Profiles) != 2 || len(again.Problems) != len(f.Problems) {
		t.Fatalf("after a save: %d profiles, %d problems; want 2 and %d", len(again.Profiles), len(again.Problems), len(f.Problems))
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"devise": "pixel-8"`) || !strings.Contains(string(b), `"nokia-3310"`) {
		t.Errorf("the bad profiles were not kept as written:\n%s", b)
	}
	if err := again.Delete("checkout-iphone"); err != nil {
		t.Fatal(err)
	}
	third, _ := Load(path)
	if len(third.Profiles) != 1 || third.Profiles[0].Name != "pixel" || len(third.Problems) != len(f.Problems) {
		t.Errorf("after a delete: %+v, %d problems", third.Profiles, len(third.Problems))
	}
}

// TestFileThatIsNoProfiles: a file that is no JSON is reported and never
// overwritten; a link is refused; a missing file has no profiles.
func TestFileThatIsNoProfiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "profiles.json")
	if f, err := Load(path); err != nil || len(f.Profiles) != 0 || len(f.Problems) != 0 {
		t.Fatalf("missing file: %+v, %v", f, err)
	}
	os.WriteFile(path, []byte("{\"profiles\": [ {\"name\": \"x\",,"), 0o600)
	f, err := Load(path)
	if err != nil || len(f.Problems) != 1 || !strings.Contains(f.Problems[0].Error(), "is not {\"profiles\": [...]}") {
		t.Fatalf("broken file: %+v, %v", f, err)
	}
	if err := f.Put(Profile{Name: "a", Origin: "http://127.0.0.1:8701", ID: "demo-public"}); err == nil || !strings.Contains(err.Error(), "left as it is") {
		t.Errorf("a save over a broken file: %v", err)
	}
	if b, _ := os.ReadFile(path); !strings.HasSuffix(string(b), ",,") {
		t.Errorf("the broken file was changed: %q", b)
	}
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte(`{"profiles": []}`), 0o600)
	link := filepath.Join(dir, "link.json")
	os.Symlink(secret, link)
	if _, err := Load(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link: %v", err)
	}
}

// FuzzLoad: any file is profiles and problems, never a panic, and every
// profile Load keeps is valid.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"profiles": [{"name": "a", "origin": "http://127.0.0.1:8701", "id": "x", "device": "390x844@3"}]}`))
	f.Add([]byte(`{"profiles": [{"name": "a", "dir": "my-app", "locale": "zz-ZZ"}, 7, null]}`))
	f.Add([]byte(`{"profiles": {}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "p.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := Load(path)
		if err != nil {
			return
		}
		for _, p := range file.Profiles {
			if err := p.Validate(); err != nil {
				t.Fatalf("kept an invalid profile %+v: %v", p, err)
			}
		}
	})
}
