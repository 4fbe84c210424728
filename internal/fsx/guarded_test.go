package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func pending(t *testing.T, path, data string) *File {
	t.Helper()
	f, err := Create(path, Shared)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	return f
}

// holds is a keep that accepts only a file holding want.
func holds(want string) func(string) error {
	return func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if string(b) != want {
			return errors.New("its bytes differ")
		}
		return nil
	}
}

// TestCommitNew: a file appearing at the path between a writer's look and
// its commit is kept, and the writer's temp file goes.
func TestCommitNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	if err := pending(t, path, "new").CommitNew(); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, path); got != "new" {
		t.Fatalf("committed %q", got)
	}
	f := pending(t, path+"2", "ours")
	if err := os.WriteFile(path+"2", []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := f.CommitNew()
	var nf *NotOursError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNotOurs) || nf.Aside != "" {
		t.Fatalf("commit over an appeared file: %v, want a NotOursError", err)
	}
	if got := readString(t, path+"2"); got != "theirs" {
		t.Errorf("the file that appeared now holds %q", got)
	}
	onlyFiles(t, dir, "a.json", "a.json2")
}

// TestCommitOver: keep is asked about the file actually replaced — one
// swapped in after the writer's check is seen, kept at the path, and the
// new file dropped; the writer's own old file is replaced.
func TestCommitOver(t *testing.T) {
	for _, tc := range []struct {
		name, there string
		replaced    bool
	}{{"as checked", "ours", true}, {"swapped since", "theirs", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "b.json")
			if err := os.WriteFile(path, []byte(tc.there), 0o644); err != nil {
				t.Fatal(err)
			}
			err := pending(t, path, "new").CommitOver(holds("ours"))
			want := "new"
			if !tc.replaced {
				want = "theirs"
				if !errors.Is(err, ErrNotOurs) {
					t.Errorf("err %v, want ErrNotOurs", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := readString(t, path); got != want {
				t.Errorf("the path holds %q, want %q", got, want)
			}
			onlyFiles(t, dir, "b.json")
		})
	}
	// A path whose file went is written as new.
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	if err := pending(t, path, "new").CommitOver(holds("ours")); err != nil || readString(t, path) != "new" {
		t.Errorf("commit over a gone file: %v", err)
	}
}

// TestRemoveOwned: a file is removed only when keep says it is the one
// expected; otherwise it is put back, and nothing is left aside.
func TestRemoveOwned(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.json")
	if err := RemoveOwned(path, holds("ours")); err != nil {
		t.Errorf("removing nothing: %v", err)
	}
	for _, there := range []string{"theirs", "ours"} {
		if err := os.WriteFile(path, []byte(there), 0o644); err != nil {
			t.Fatal(err)
		}
		err := RemoveOwned(path, holds("ours"))
		if there == "ours" {
			if err != nil {
				t.Errorf("removing our file: %v", err)
			}
			onlyFiles(t, dir)
			continue
		}
		if !errors.Is(err, ErrNotOurs) || readString(t, path) != "theirs" {
			t.Errorf("removing their file: %v", err)
		}
		onlyFiles(t, dir, "d.json")
	}
	if IsTemp(asideName("d.json")) {
		t.Error("an aside name is a temp name: a sweep would remove a file moved aside")
	}
}

// TestGuardedWithoutRenameat2: where the system has neither flag nor hard
// links, the same checks hold in two steps.
func TestGuardedWithoutRenameat2(t *testing.T) {
	nr, ex := noReplace, exchangeFiles
	t.Cleanup(func() { noReplace, exchangeFiles = nr, ex })
	noReplace = func(string, string) error { return errUnsupported }
	exchangeFiles = func(string, string) error { return errUnsupported }
	t.Run("new", TestCommitNew)
	t.Run("over", TestCommitOver)
	t.Run("remove", TestRemoveOwned)
}

// TestCommitOverCannotPutBack: when the swap back fails, the other file is
// kept under an aside name (never a temp name a sweep would remove) and
// the error says where.
func TestCommitOverCannotPutBack(t *testing.T) {
	ex := exchangeFiles
	t.Cleanup(func() { exchangeFiles = ex })
	calls, unsupported := 0, false
	exchangeFiles = func(a, b string) error {
		if calls++; calls > 1 {
			return errors.New("no second exchange")
		}
		err := ex(a, b)
		unsupported = errors.Is(err, errUnsupported)
		return err
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "e.json")
	if err := os.WriteFile(path, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := pending(t, path, "new").CommitOver(holds("ours"))
	if unsupported {
		t.Skip("no renameat2 exchange here: the two-step way never swaps")
	}
	var nf *NotOursError
	if !errors.As(err, &nf) || nf.Aside == "" || IsTemp(filepath.Base(nf.Aside)) {
		t.Fatalf("err %v, want a NotOursError naming an aside file", err)
	}
	if got := readString(t, nf.Aside); got != "theirs" {
		t.Errorf("the aside file holds %q", got)
	}
}
