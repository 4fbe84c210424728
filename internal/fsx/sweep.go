package fsx

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// IsTemp reports whether name (a file name, not a path) is one of the temp
// names impactbench's atomic writes make: ".<name>.tmp-<16 hex digits>",
// or one of the names versions before the one file layer made (all with a
// random decimal number from os.CreateTemp where the digits are):
// ".<name>.tmp-<digits>", ".tmp-<digits>", ".tmp-<name>-<digits>",
// ".report-<digits>.html.tmp" and ".<name>.<digits>.tmp".
func IsTemp(name string) bool {
	if !strings.HasPrefix(name, ".") {
		return false
	}
	if i := strings.LastIndex(name, tempMarker); i > 0 && isHex(name[i+len(tempMarker):], tempRandLen) {
		return true
	}
	return legacyTemp.MatchString(name)
}

// legacyTemp matches the temp names of earlier versions, which a killed
// run of one of them may have left behind.
var legacyTemp = regexp.MustCompile(`^(?:\..+\.tmp-\d+|\.tmp-\d+|\.tmp-.+-\d+|\.report-\d+\.html\.tmp|\..+\.\d+\.tmp)$`)

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// SweepTemps removes the temp files (IsTemp) last modified before cutoff
// anywhere under the given directories, and returns how many it removed.
// A temp file is what a write killed between creating it and renaming it
// left behind: never read, but they pile up over interrupted runs. Nothing
// else is touched: other files, directories and symbolic links are left
// alone, and links inside the directories are not followed (a directory
// given that is itself a link, such as a benchmark folder linked from
// elsewhere, is swept: impactbench writes through it). Missing or
// unreadable directories are skipped, and so is what lies more than
// WalkDepth levels down. The directories are read in batches (Walk), never
// a whole listing at once: a call store's folder may hold millions of
// files. The caller must hold the lock of whatever writes there, and
// choose cutoff so that a temp file of a writer working beside it (a
// report, an export) is younger.
func SweepTemps(cutoff time.Time, dirs ...string) (removed int) {
	for _, root := range outermost(dirs) {
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
		_ = Walk(root, func(path string, e fs.DirEntry) error {
			if !e.Type().IsRegular() || !IsTemp(e.Name()) {
				return nil
			}
			info, err := e.Info()
			if err != nil || !info.ModTime().Before(cutoff) {
				return nil
			}
			if os.Remove(path) == nil {
				removed++
			}
			return nil
		})
	}
	return removed
}

// outermost drops duplicates and directories inside another one listed,
// so that each file is looked at once.
func outermost(dirs []string) []string {
	clean := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if d != "" {
			clean = append(clean, filepath.Clean(d))
		}
	}
	slices.Sort(clean)
	var out []string
	for _, d := range clean {
		if !slices.ContainsFunc(out, func(o string) bool { return within(d, o) }) {
			out = append(out, d)
		}
	}
	return out
}

// within reports whether dir is root or inside it (lexically).
func within(dir, root string) bool {
	if dir == root {
		return true
	}
	return strings.HasPrefix(dir, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}
