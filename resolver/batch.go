package resolver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Batches for CI (docs/resolve.md, "Many Miniapps at once"): ResolveList
// resolves every "id origin" line of a list against the dashboard (`resolve
// --from FILE`); CheckDir checks every manifest of a folder offline
// (`resolve --manifests DIR`). Each Miniapp is one test case of the JUnit
// report (Batch.WriteJUnit); the batch's outcome is the worst of its
// Miniapps' (Batch.Outcome). The errors of a list or a folder start with
// its path, as a compiler's do, so that they read as the line to fix.

// MaxBatch bounds the Miniapps of one batch: a CI list, not a crawl.
const MaxBatch = 10_000

// maxListBytes bounds a list file; maxURLBytes a NAME.url file.
const (
	maxListBytes = 4 << 20
	maxURLBytes  = 8 << 10
)

// OutcomeUnreadable is a batch item's outcome when its input could not be
// read: it has no report, only an error.
const OutcomeUnreadable = "unreadable"

// BatchItem is one Miniapp of a batch and what came of it.
type BatchItem struct {
	Name   string  `json:"name"` // "id @ origin", or the manifest's file name
	Report *Report `json:"report,omitempty"`
	Error  string  `json:"error,omitempty"` // input that could not be read
	// Took is how long its resolve or check took (the JUnit test case's
	// time).
	Took time.Duration `json:"-"`
}

// Outcome is the item's report's outcome, or OutcomeUnreadable.
func (it BatchItem) Outcome() string {
	if it.Report == nil {
		return OutcomeUnreadable
	}
	return it.Report.Outcome
}

// Batch is what came of every Miniapp of a batch, in the list's or the
// folder's order. As JSON it is the document `resolve --from|--manifests
// --json` prints: {"miniapps": [{"name", "report"?, "error"?}]}.
type Batch struct {
	Miniapps []BatchItem `json:"miniapps"`
}

// ListEntry is one line of a list: a Miniapp's id and origin.
type ListEntry struct {
	ID, Origin string
}

// ReadList reads the list in the file at path (ParseList), of at most
// 4 MiB.
func ReadList(path string) ([]ListEntry, error) {
	data, err := readLimited(path, maxListBytes)
	if err != nil {
		return nil, err
	}
	return ParseList(path, data)
}

// ParseList parses a list read from name: one "id origin" per line, blank
// lines and lines starting with # skipped, at most MaxBatch entries and at
// least one.
func ParseList(name string, data []byte) ([]ListEntry, error) {
	var out []ListEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: %q is not \"id origin\" (two fields, e.g. com.example.notes https://notes.example)", name, n, line)
		}
		if len(out) == MaxBatch {
			return nil, fmt.Errorf("%s: more than %d Miniapps; split the list", name, MaxBatch)
		}
		out = append(out, ListEntry{ID: f[0], Origin: f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w (a line is at most 64 KiB)", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s lists no Miniapp: write one \"id origin\" per line", name)
	}
	return out, nil
}

// ResolveList resolves every Miniapp of list, one after the other.
func (r *Resolver) ResolveList(ctx context.Context, list []ListEntry) *Batch {
	b := &Batch{}
	for _, l := range list {
		start := time.Now()
		app, err := r.Resolve(ctx, l.ID, l.Origin)
		rep, text := reportOf(app, err)
		b.Miniapps = append(b.Miniapps, BatchItem{Name: l.ID + " @ " + l.Origin, Report: rep, Error: text, Took: time.Since(start)})
	}
	return b
}

// ManifestFiles lists the manifests of dir, by name: every *.webmanifest
// and *.json file but the client files (*.client.json), at least one and
// at most MaxBatch.
func ManifestFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && isManifestFile(n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no manifest (*.webmanifest or *.json)", dir)
	}
	if len(out) > MaxBatch {
		return nil, fmt.Errorf("%s holds more than %d manifests; split it", dir, MaxBatch)
	}
	sort.Strings(out)
	return out, nil
}

func isManifestFile(name string) bool {
	if strings.HasSuffix(name, ".client.json") {
		return false
	}
	return strings.HasSuffix(name, ".webmanifest") || strings.HasSuffix(name, ".json")
}

// CheckDir checks the manifests names of dir (ManifestFiles) offline, one
// after the other, each against the id it declares. Beside
// NAME.webmanifest, NAME.client.json is its client configuration (the
// dashboard's answer) and NAME.url the URL it is served from, which the
// origin checks need; without a client file, the manifest alone is checked
// (CheckManifest).
func (r *Resolver) CheckDir(ctx context.Context, dir string, names []string) *Batch {
	b := &Batch{}
	for _, n := range names {
		start := time.Now()
		it := r.checkFile(ctx, dir, n)
		it.Took = time.Since(start)
		b.Miniapps = append(b.Miniapps, it)
	}
	return b
}

// checkFile checks the manifest name of dir, with its client file when
// there is one.
func (r *Resolver) checkFile(ctx context.Context, dir, name string) BatchItem {
	it := BatchItem{Name: name}
	manifest, err := ReadInput(filepath.Join(dir, name))
	if err != nil {
		it.Error = err.Error()
		return it
	}
	id := manifestID(manifest)
	clientPath := filepath.Join(dir, strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".webmanifest")+".client.json")
	client, err := ReadInput(clientPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		rep, err := r.CheckManifest(ctx, id, "", manifest)
		it.Report = rep
		if rep == nil && err != nil {
			it.Error = err.Error()
		}
	case err != nil:
		it.Error = err.Error()
	default:
		it.Report, it.Error = r.checkWithClient(ctx, id, clientPath, manifest, client)
	}
	return it
}

// checkWithClient checks a manifest with its client configuration, read
// from clientPath; the URL the manifest is served from is in the NAME.url
// beside it.
func (r *Resolver) checkWithClient(ctx context.Context, id, clientPath string, manifest, client []byte) (*Report, string) {
	base := strings.TrimSuffix(clientPath, ".client.json")
	u, err := readLimited(base+".url", maxURLBytes)
	if err != nil {
		return nil, fmt.Sprintf("%s needs the URL the manifest is served from, for the origin checks: write it to %s.url (e.g. https://app.example/miniapp.webmanifest): %v",
			filepath.Base(clientPath), filepath.Base(base), err)
	}
	return reportOf(r.Check(ctx, id, strings.TrimSpace(string(u)), manifest, client))
}

// manifestID is the id a manifest declares, which an offline batch checks
// it against (the identity stage then checks the member's form only).
func manifestID(manifest []byte) string {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(manifest, &m) != nil {
		return ""
	}
	s, _ := m.ID.(string)
	return s
}

// ReportOf is the report of Resolve or Check whatever the outcome, nil
// when err has none (the input could not be read, the configuration is
// wrong).
func ReportOf(app *Miniapp, err error) *Report {
	var rej *Rejection
	var und *Undecided
	switch {
	case err == nil && app != nil:
		return app.Report
	case errors.As(err, &rej):
		return rej.Report
	case errors.As(err, &und):
		return und.Report
	}
	return nil
}

// reportOf is ReportOf, and the error's text when there is no report.
func reportOf(app *Miniapp, err error) (*Report, string) {
	rep := ReportOf(app, err)
	if rep != nil || err == nil {
		return rep, ""
	}
	return nil, err.Error()
}

// Outcome is the batch's worst outcome: OutcomeUndecided if any Miniapp
// could not be decided or read, else OutcomeRejected if any was rejected,
// else OutcomeAccepted.
func (b *Batch) Outcome() string {
	worst := OutcomeAccepted
	for _, it := range b.Miniapps {
		switch it.Outcome() {
		case OutcomeUnreadable, OutcomeUndecided:
			return OutcomeUndecided
		case OutcomeRejected:
			worst = OutcomeRejected
		}
	}
	return worst
}

// WriteText writes the batch for people: a line per Miniapp (its outcome
// and name) with its reasons or its error, then the counts.
func (b *Batch) WriteText(w io.Writer) {
	counts := map[string]int{}
	for _, it := range b.Miniapps {
		fmt.Fprintf(w, "%-10s %s\n", it.Outcome(), it.Name)
		counts[it.Outcome()]++
		if it.Report == nil {
			fmt.Fprintf(w, "  %s\n", it.Error)
			continue
		}
		for _, r := range it.Report.Reasons {
			r.WriteText(w)
		}
	}
	fmt.Fprintf(w, "%d Miniapp(s): %d accepted, %d passed (manifest only), %d rejected, %d undecided, %d unreadable\n",
		len(b.Miniapps), counts[OutcomeAccepted], counts[OutcomePassed], counts[OutcomeRejected],
		counts[OutcomeUndecided], counts[OutcomeUnreadable])
}

// ReadInput reads a manifest or a client configuration for an offline
// check from the file at path, refusing one larger than DefaultMaxBytes
// as a download would be.
func ReadInput(path string) ([]byte, error) {
	return readLimited(path, DefaultMaxBytes)
}

// readLimited reads a file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes, the limit of a download", path, limit)
	}
	return data, nil
}
