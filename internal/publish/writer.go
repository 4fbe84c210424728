package publish

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/site"
)

// maxManifestBytes bounds the manifest (a study of tens of thousands of
// files lists a few MB).
const maxManifestBytes = 64 << 20

type manifest struct {
	Files []string `json:"files"`
	// Written records, for each listed file this publish wrote (or found
	// already holding its bytes), its size and sha256 as publish left it:
	// a file whose bytes differ now was changed by someone else, and is
	// not overwritten or removed without --force. A file listed without
	// an entry (a manifest from before the hashes, or one a publish
	// killed half way may have written) is trusted by its path.
	Written map[string]written `json:"written,omitempty"`
}

// written is a file as publish wrote it.
type written struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// UnmarshalJSON refuses, as it is decoded, a record that is not exactly
// a size and a sha256, so that a manifest of empty records ("a":{}, a few
// bytes each) cannot make many times its size in memory. It decodes with
// json.Unmarshal, not a Decoder per record (whose buffers cost about
// 2.5 KB a record: 80 MB for the July study's 31,000 files), so the other
// keys a Decoder would refuse are counted instead: a record with both of
// its keys and exactly two colons has no other (neither key nor either
// value can hold one).
func (r *written) UnmarshalJSON(b []byte) error {
	var p struct {
		Size   *int64 `json:"size"`
		SHA256 string `json:"sha256"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p.Size == nil || *p.Size < 0 || !sha256Hex.MatchString(p.SHA256) || bytes.Count(b, []byte{':'}) != 2 {
		return errors.New("a record is a size and a sha256 (64 lowercase hex digits), nothing else")
	}
	*r = written{Size: *p.Size, SHA256: p.SHA256}
	return nil
}

// sum is what the manifest records of data.
func sum(data []byte) written {
	h := sha256.Sum256(data)
	return written{Size: int64(len(data)), SHA256: hex.EncodeToString(h[:])}
}

// mode is what a writer does with the files it is given.
type mode int

const (
	// check validates every path (and the manifest) and writes nothing:
	// the pass Publish makes before touching the output directory, so a
	// refused input leaves it as it was.
	check mode = iota
	dry        // compare with what is there and list, write nothing
	write
)

// writer puts files under out, leaving alone those whose bytes would not
// change. It owns only what publish generates: every path it writes or
// removes is one publish would generate (generated), and no directory on
// the way to it under out may be a symbolic link.
type writer struct {
	out    string
	mode   mode
	rep    *Report
	seen   map[string]bool
	models []string // the study's model ids, by index
	// owned is what the last publish into out wrote (its manifest's
	// files, in order); hadManifest says whether there was one. A file
	// already at a path publish writes that the manifest does not list
	// is not publish's, and is refused unless force (takeOver).
	owned       []string
	ownedSet    map[string]bool
	hadManifest bool
	force       bool
	// recorded is the last manifest's Written: the owned files whose
	// bytes publish knows. The check pass refuses one whose bytes differ
	// now (unless force) and puts those that match in intact; the write
	// pass, given intact, compares new bytes with the recorded sha256
	// instead of reading such a file a second time.
	recorded map[string]written
	intact   map[string]bool
	// absent is the paths the check pass found no file at (not owned, or
	// owned and recorded but missing): the write pass refuses to replace
	// or remove a file that appeared there since (stillAsChecked).
	absent map[string]bool
	// removed is what this pass removed, for the manifest a refusal
	// leaves (refuse).
	removed map[string]bool
	// sums is what this pass wrote (or found already there), for the
	// manifest it leaves.
	sums map[string]written
	// planned is the check pass's files; claimed says whether the
	// manifest naming them has been written (before the first file).
	planned map[string]bool
	claimed bool
}

func newWriter(out string, m mode, rep *Report) *writer {
	return &writer{out: out, mode: m, rep: rep, seen: map[string]bool{}, intact: map[string]bool{}, absent: map[string]bool{},
		removed: map[string]bool{}, sums: map[string]written{}}
}

// emit writes data to rel (a slash path under out) unless the file already
// holds exactly these bytes. A written file replaces the old one by rename,
// so a reader (the site, a static host) sees the old file or the new one,
// never a torn one. Files are not fsynced one by one — a study has tens of
// thousands — so after a crash, publish again: it compares bytes, and
// rewrites whatever did not reach the disk.
func (w *writer) emit(rel string, data []byte) error {
	if w.seen[rel] {
		return fmt.Errorf("publish: %s would be written twice", rel)
	}
	w.seen[rel] = true
	w.rep.Files++
	// In the write pass, a file planted (or a link) since the check pass
	// is refused here too, and the manifest left true (refuse).
	if err := w.checkPath(rel); err != nil {
		return w.refuse(err)
	}
	if err := w.checkOwned(rel); err != nil {
		return w.refuse(err)
	}
	if w.mode == check {
		return nil
	}
	path := filepath.Join(w.out, filepath.FromSlash(rel))
	now := sum(data)
	unchanged := false
	if rec, ok := w.recorded[rel]; ok && w.intact[rel] {
		// The check pass read the file and found the bytes recorded.
		unchanged = rec == now
	} else {
		unchanged = same(path, data)
	}
	if unchanged {
		w.rep.Unchanged++
		w.sums[rel] = now
		return nil
	}
	w.rep.Written = append(w.rep.Written, rel)
	if w.mode == dry {
		w.sums[rel] = now
		return nil
	}
	if err := w.stillAsChecked(rel, false); err != nil {
		return w.refuse(err)
	}
	if err := w.claim(); err != nil {
		return err
	}
	if err := w.replace(rel, path, data); err != nil {
		return err
	}
	w.sums[rel] = now
	return nil
}

// atCommit, when set (tests), runs right before a file is committed or
// removed, after the last look at it: where a planted file must survive.
var atCommit func(path string)

// replace writes data to path. Where the check pass found no file, the
// rename creates it only if there is still none; where it found the
// recorded bytes, the rename swaps the files and the one swapped out is
// checked again, and put back if it is not publish's (fsx's guarded
// commits): a file planted at the last instant is not lost either.
func (w *writer) replace(rel, path string, data []byte) error {
	f, err := fsx.Create(path, fsx.Shared)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer f.Abort()
	f.Unsynced() // see emit
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if atCommit != nil {
		atCommit(path)
	}
	switch {
	case w.force || (!w.absent[rel] && !w.intact[rel]):
		err = f.Commit()
	case w.absent[rel]:
		err = f.CommitNew()
	default:
		err = f.CommitOver(func(old string) error { return w.ours(rel, old) })
	}
	return w.notOurs(rel, err, false)
}

// ours says why the file at p, standing for rel, is not the one the
// manifest records (nil when it is, or when it is gone).
func (w *writer) ours(rel, p string) error {
	_, why, err := differsFrom(p, w.recorded[rel])
	switch {
	case err != nil:
		return err
	case why != "":
		return errors.New(why + ", which they held when publish checked the folder")
	}
	return nil
}

// notOurs turns a guarded commit's or removal's refusal into the refusal
// stillAsChecked gives (exit 2, naming the file).
func (w *writer) notOurs(rel string, err error, removing bool) error {
	var nf *fsx.NotOursError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		why := nf.Why.Error()
		if w.absent[rel] {
			why = "there was no file there when publish checked the folder; now there is one"
		}
		if nf.Aside != "" {
			why += "; it could not be put back and is now at " + nf.Aside
		}
		return w.refuse(changedWhileRunning(nf.Path, why, removing))
	default:
		return fmt.Errorf("publish: %w", err)
	}
}

// checkPath refuses rel unless publish generates it and nothing on its
// way under out is a link.
func (w *writer) checkPath(rel string) error {
	if !layout.IsPublished(rel) {
		return &artifacts.FileError{Path: filepath.Join(w.out, filepath.FromSlash(rel)), Row: -1,
			Err: errors.New("is not a path publish writes: an id in it is not an id, or a name is too long")}
	}
	return noLinks(w.out, rel)
}

// checkOwned refuses rel when a file (or link) is already there that the
// last publish into out did not write: a folder publish never wrote into
// (a checkout of the website, someone's own data/models.json) keeps its
// files unless --force takes them over.
func (w *writer) checkOwned(rel string) error {
	if w.force {
		return nil
	}
	if w.ownedSet[rel] {
		return w.checkIntact(rel, false)
	}
	path := filepath.Join(w.out, filepath.FromSlash(rel))
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		w.absent[rel] = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	why := "its manifest " + layout.PublishManifestFile + " does not list it"
	if !w.hadManifest {
		why = "there is no " + layout.PublishManifestFile + " there, so publish has never written into " + w.out
	}
	return &artifacts.FileError{Path: path, Row: -1,
		Err: fmt.Errorf("already exists and an earlier publish did not write it (%s): publish does not overwrite files it did not write", why),
		Hint: "; publish into an empty or new folder, or add --force to take over the files publish writes there " +
			"(data/, scenarios/, index.html, site/; nothing else in the folder is touched)"}
}

// checkIntact, in the check pass, refuses an owned file rel that the
// manifest records and that no longer holds the bytes recorded: someone
// changed (or replaced) it since publish wrote it, so publish neither
// overwrites nor (removing, when it no longer writes rel) removes it
// unless --force. A missing file is no loss; a file listed without a
// record is trusted by its path. Reads at most the recorded size.
func (w *writer) checkIntact(rel string, removing bool) error {
	rec, ok := w.recorded[rel]
	if !ok || w.mode != check || w.force {
		return nil
	}
	path := filepath.Join(w.out, filepath.FromSlash(rel))
	gone, why, err := differsFrom(path, rec)
	switch {
	case err != nil:
		return err
	case gone:
		w.absent[rel] = true
		return nil
	case why == "":
		w.intact[rel] = true
		return nil
	}
	what, hint := "overwrite", "; keep your version elsewhere (or delete the file), or add --force to take it over: publish then overwrites it"
	if removing {
		what, hint = "remove", "; keep your version elsewhere (or delete the file), or add --force to take it over: publish then removes it, as it no longer writes it"
	}
	return &artifacts.FileError{Path: path, Row: -1,
		Err:  fmt.Errorf("was changed since publish wrote it (%s): publish does not %s a file whose bytes it did not write", why, what),
		Hint: hint}
}

// stillAsChecked, in the write pass, right before rel is replaced (or,
// removing, removed), refuses it unless it is as the check pass saw it:
// still absent where there was no file, still holding the bytes the
// manifest records where the check found them intact. A file planted or
// edited there between the passes is not publish's: the error is a
// *FileError naming it (exit 2). A file listed without a record is
// trusted by its path, as in the check pass, and --force takes over
// whatever is there. The moment between this look and the rename (or
// removal) itself is closed by replace's and removeStale's guarded
// renames where the system has them (Linux's renameat2, hard links).
func (w *writer) stillAsChecked(rel string, removing bool) error {
	if w.force || (!w.absent[rel] && !w.intact[rel]) {
		return nil
	}
	path := filepath.Join(w.out, filepath.FromSlash(rel))
	why := ""
	if w.absent[rel] {
		st, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("publish: %w", err)
		}
		why = "there was no file there when publish checked the folder; now there is " + fileKind(st)
	} else {
		gone, differs, err := differsFrom(path, w.recorded[rel])
		switch {
		case err != nil:
			return err
		case gone || differs == "":
			return nil // gone (nothing of anyone's is lost), or as checked
		}
		why = differs + ", which they held when publish checked the folder"
	}
	return changedWhileRunning(path, why, removing)
}

// changedWhileRunning is the refusal of a file at path found changed in
// the write pass (why).
func changedWhileRunning(path, why string, removing bool) error {
	what := "overwrite"
	if removing {
		what = "remove"
	}
	return &artifacts.FileError{Path: path, Row: -1,
		Err: fmt.Errorf("was changed while publish ran (%s): publish does not %s a file whose bytes it did not write", why, what),
		Hint: "; publish stopped there: the files it wrote before it are in place and " + layout.PublishManifestFile +
			" records them; keep your version elsewhere (or delete the file) and publish again, or add --force to take it over"}
}

// differsFrom reads the file at path, never through a link, and says
// whether it is gone, or else why it no longer holds the bytes rec
// records ("" when it does). It reads at most the recorded size.
func differsFrom(path string, rec written) (gone bool, why string, err error) {
	f, err := fsx.OpenNoFollow(path)
	var nr *fsx.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, "", nil
	case errors.As(err, &nr):
		return false, "it is now " + nr.What, nil
	case err != nil:
		return false, "", fmt.Errorf("publish: %w", err)
	}
	now, err := sumOf(f, rec.Size)
	f.Close()
	if err != nil {
		return false, "", fmt.Errorf("publish: read %s: %w", path, err)
	}
	if now == rec {
		return false, "", nil
	}
	return false, "its bytes differ from the sha256 " + layout.PublishManifestFile + " records", nil
}

// fileKind says what st is, for a message.
func fileKind(st fs.FileInfo) string {
	switch {
	case st.Mode().IsRegular():
		return "a file"
	case st.Mode()&fs.ModeSymlink != 0:
		return "a symbolic link"
	case st.IsDir():
		return "a directory"
	default:
		return "something that is not a regular file"
	}
}

// refuse returns err, a file the write pass refused (stillAsChecked,
// checkOwned, checkPath), after recording in the manifest (when this pass
// already claimed files in it) what publish owns now: the last publish's files with their
// records, but those this pass removed, plus those it wrote (or found
// holding their bytes) with their new sums. A file this pass did not
// write — the refused one above all — is never listed unless the last
// publish owned it, nor recorded otherwise than it was.
func (w *writer) refuse(err error) error {
	if !w.claimed {
		return err // the manifest is still the last publish's, and true
	}
	set := map[string]bool{}
	sums := map[string]written{}
	for _, rel := range w.owned {
		if !w.removed[rel] {
			set[rel] = true
			if rec, ok := w.recorded[rel]; ok {
				sums[rel] = rec
			}
		}
	}
	for rel, s := range w.sums {
		set[rel] = true
		sums[rel] = s
	}
	_ = w.writeManifest(set, sums) // the refusal is the error to give
	return err
}

// sumOf is the size and sha256 of f, reading at most size+1 bytes (a file
// larger than size differs anyway).
func sumOf(f *os.File, size int64) (written, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, size+1))
	if err != nil {
		return written{}, err
	}
	return written{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// emitAll emits the site's files.
func (w *writer) emitAll(files []site.File) error {
	for _, f := range files {
		if err := w.emit(f.Path, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// noLinks refuses rel when a directory on its way under out is a
// symbolic link or not a directory, or when rel itself is a directory:
// publish never writes or removes through a link someone planted there.
func noLinks(out, rel string) error {
	parts := strings.Split(rel, "/")
	p := out
	for i, part := range parts {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if errors.Is(err, syscall.ENOTDIR) {
			return &artifacts.FileError{Path: p, Row: -1, Err: fmt.Errorf("a file is in the way of %s, which publish writes; remove it", rel)}
		}
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		last := i == len(parts)-1
		switch {
		case st.Mode()&fs.ModeSymlink != 0 && !last:
			return &artifacts.FileError{Path: p, Row: -1, Err: errors.New("is a symbolic link: publish does not write through links in its output directory; remove it")}
		case !last && !st.IsDir(), last && st.IsDir():
			return &artifacts.FileError{Path: p, Row: -1, Err: fmt.Errorf("is in the way of %s, which publish writes; remove it", rel)}
		}
	}
	return nil
}

// same reports whether path is a regular file (not a link) holding
// exactly data.
func same(path string, data []byte) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() != int64(len(data)) {
		return false
	}
	f, err := fsx.OpenNoFollow(path)
	if err != nil {
		return false
	}
	defer f.Close()
	old, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	return err == nil && bytes.Equal(old, data)
}

// finish removes the files the previous publish wrote that this one did
// not (listed in its manifest, read by readOwned), then records this
// publish's files.
func (w *writer) finish() error {
	var stale []string
	for _, rel := range w.owned {
		if err := noLinks(w.out, rel); err != nil {
			return w.refuse(err)
		}
		if !w.seen[rel] {
			if err := w.checkIntact(rel, true); err != nil {
				return err
			}
			stale = append(stale, rel)
		}
	}
	if err := noLinks(w.out, layout.PublishManifestFile); err != nil {
		return w.refuse(err)
	}
	if w.mode == check {
		return nil
	}
	if err := w.removeStale(stale); err != nil {
		return err
	}
	return w.writeManifest(w.seen, w.sums)
}

// readOwned reads the last publish's manifest: what publish owns in out.
// An entry that is not a path publish generates is an error, not an
// instruction (a planted manifest naming README.md or .git/config).
func (w *writer) readOwned() error {
	mpath := filepath.Join(w.out, layout.PublishManifestFile)
	old, found, err := readManifest(mpath)
	if err != nil {
		return err
	}
	for i, rel := range old.Files {
		if !layout.IsPublished(rel) {
			return &artifacts.FileError{Path: mpath, Row: i, Field: "files",
				Err: fmt.Errorf("%s is not a path publish writes: the manifest is not publish's own (delete it: publish then removes no stale files)", quote(rel))}
		}
	}
	w.owned, w.hadManifest = old.Files, found
	w.ownedSet = make(map[string]bool, len(old.Files))
	for _, rel := range old.Files {
		w.ownedSet[rel] = true
	}
	for _, rel := range slices.Sorted(maps.Keys(old.Written)) {
		if !w.ownedSet[rel] {
			return &artifacts.FileError{Path: mpath, Row: -1, Field: "written",
				Err:  fmt.Errorf("records %s, which its files do not list: the manifest is not publish's own", quote(rel)),
				Hint: " (delete it: publish then removes no stale files)"}
		}
	}
	w.recorded = old.Written
	return nil
}

// sha256Hex is a sha256 as the manifest records it.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// claim records in the manifest, before the first file is written, every
// file this publish will write (planned: the check pass's) beside those
// the last one wrote, so that a publish killed half way leaves a manifest
// naming every file it may have made, and the next publish owns them. The
// records of the planned files are dropped (those files are trusted by
// path until this publish's own manifest records them): a publish killed
// after rewriting one must not leave it looking changed by someone else.
// A publish that rewrites nothing never claims.
func (w *writer) claim() error {
	if w.claimed || w.mode != write {
		return nil
	}
	w.claimed = true
	all := maps.Clone(w.planned)
	if all == nil {
		all = map[string]bool{}
	}
	for _, rel := range w.owned {
		all[rel] = true
	}
	keep := map[string]written{}
	for rel, rec := range w.recorded {
		if !w.planned[rel] {
			keep[rel] = rec
		}
	}
	return w.writeManifest(all, keep)
}

// removeStale removes the files the last publish wrote and this one does
// not, and the directories they leave empty.
func (w *writer) removeStale(stale []string) error {
	for _, rel := range stale {
		w.rep.Removed = append(w.rep.Removed, rel)
		if w.mode == dry {
			continue
		}
		path := filepath.Join(w.out, filepath.FromSlash(rel))
		if err := w.stillAsChecked(rel, true); err != nil {
			return w.refuse(err)
		}
		if atCommit != nil {
			atCommit(path)
		}
		var err error
		switch {
		case w.force || (!w.absent[rel] && !w.intact[rel]):
			if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		case w.absent[rel]: // nothing was there: whatever is now is not publish's
			err = fsx.RemoveOwned(path, func(string) error { return errors.New("appeared") })
		default:
			err = fsx.RemoveOwned(path, func(p string) error { return w.ours(rel, p) })
		}
		if err := w.notOurs(rel, err, true); err != nil {
			return err
		}
		w.removed[rel] = true
		pruneEmpty(w.out, filepath.Dir(path))
	}
	slices.Sort(w.rep.Removed)
	return nil
}

// writeManifest records set as what publish owns in out, with the sizes
// and sha256 sums of those in sums.
func (w *writer) writeManifest(set map[string]bool, sums map[string]written) error {
	mpath := filepath.Join(w.out, layout.PublishManifestFile)
	files := make([]string, 0, len(set))
	for rel := range set {
		files = append(files, rel)
	}
	slices.Sort(files)
	rec := make(map[string]written, len(sums))
	for rel, s := range sums {
		if set[rel] {
			rec[rel] = s
		}
	}
	data, err := json.MarshalIndent(manifest{Files: files, Written: rec}, "", " ")
	if err != nil {
		return err
	}
	if w.mode == dry || same(mpath, data) {
		return nil
	}
	return fsx.WriteFile(mpath, data, fsx.Shared)
}

// readManifest reads the last publish's manifest (none: empty, and found
// false), refusing a link, anything but a regular file, and a file that is
// not one.
func readManifest(path string) (manifest, bool, error) {
	m, err := readManifestFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	return m, err == nil, err
}

func readManifestFile(path string) (manifest, error) {
	var m manifest
	f, err := fsx.OpenNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, err
	}
	var nr *fsx.NotRegularError
	if errors.As(err, &nr) {
		return m, &artifacts.FileError{Path: path, Row: -1, Err: errors.New("is " + nr.What + ", not publish's manifest (a regular file): remove it")}
	}
	if err != nil {
		return m, fmt.Errorf("publish: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return m, fmt.Errorf("publish: %w", err)
	}
	if len(data) > maxManifestBytes {
		return m, &artifacts.FileError{Path: path, Row: -1, Err: fmt.Errorf("larger than %s: not a publish manifest", artifacts.FormatBytes(maxManifestBytes))}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, &artifacts.FileError{Path: path, Row: -1, Err: fmt.Errorf("not a publish manifest: %w", err), Hint: " (delete it: publish then removes no stale files)"}
	}
	return m, nil
}

// pruneEmpty removes dir and its empty parents up to (not including) root.
func pruneEmpty(root, dir string) {
	root = filepath.Clean(root)
	for d := filepath.Clean(dir); d != root && strings.HasPrefix(d, root+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			return
		}
	}
}

// tempName is the name of an atomic write's temp file (fsx): the target's
// name, ".tmp-" and 16 hex digits.
var tempName = regexp.MustCompile(`^\.(.+)\.tmp-[0-9a-f]{16}$`)

// staleTemp is how old a temp file must be before it is taken for one a
// killed publish left (a running publish's are seconds old).
const staleTemp = time.Minute

// maxSweepEntries bounds the entries of the output folder that the temp
// sweep reads: publish writes a few files and folders there.
var maxSweepEntries = 100_000

// sweepTemps removes the temp files a killed publish left: only those
// of files publish generates (or of its manifest), in the directories it
// writes, over a minute old, and only in a folder publish has written
// into before (a manifest is there) or takes over (--force): publish writes
// its manifest before its first temp file. Links are not followed, and
// folders are read in batches (fsx.Walk), never whole.
func (w *writer) sweepTemps(now time.Time) {
	if !w.hadManifest && !w.force {
		return
	}
	visit := func(path string, d fs.DirEntry) error {
		if d.IsDir() {
			return nil
		}
		m := tempName.FindStringSubmatch(d.Name())
		if m == nil || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(w.out, filepath.Join(filepath.Dir(path), m[1]))
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !layout.IsPublished(rel) && rel != layout.PublishManifestFile {
			return nil
		}
		if info, err := d.Info(); err == nil && now.Sub(info.ModTime()) > staleTemp {
			_ = os.Remove(path)
		}
		return nil
	}
	// Over maxSweepEntries, the folder is not publish's: nothing is swept.
	if entries, err := fsx.ReadDir(w.out, maxSweepEntries, func(e fs.DirEntry) bool { return tempName.MatchString(e.Name()) }); err == nil {
		for _, e := range entries {
			_ = visit(filepath.Join(w.out, e.Name()), e)
		}
	}
	for _, sub := range layout.PublishedSubdirs {
		root := filepath.Join(w.out, sub)
		if st, err := os.Lstat(root); err != nil || !st.IsDir() {
			continue // missing, or a link: not publish's
		}
		_ = fsx.Walk(root, visit) // in batches, never a folder's whole listing
	}
}

// quote writes a path from a file for a message.
func quote(s string) string { return ids.Quote(s) }

func isID(s string) bool { return ids.Problem(s, ids.MaxScenario) == "" }
