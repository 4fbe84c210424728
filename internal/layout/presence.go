package layout

import (
	"path/filepath"
	"strings"
)

// Where the workers of a study show themselves to each other, so each
// divides the provider limits by the workers running (cluster.JoinDir on a
// shared directory, callstore.Heartbeat on an object store).
const (
	// LiveDirName holds the workers' presence beside a shared call store:
	// a directory of lock files, or an object prefix of heartbeats.
	LiveDirName = ".impactbench-live"
	// WorkersDirName holds it in the project's .cache when the store is the
	// project's own (the documented Job mounts the project into every pod);
	// dot-named, so no benchmark's cache directory can be it.
	WorkersDirName = ".workers"
	presencePrefix = "worker-"
)

// PresenceDir is where workers on one directory show themselves: beside
// the shared store when one is configured as a directory (storeDir), else
// in the project's .cache.
func PresenceDir(projectDir, storeDir string) string {
	if storeDir != "" {
		return filepath.Join(storeDir, LiveDirName)
	}
	return filepath.Join(projectDir, CacheDirName, WorkersDirName)
}

// PresenceFile is a worker's presence lock in dir, id its random name.
func PresenceFile(dir, id string) string {
	return filepath.Join(dir, presencePrefix+id+LockFile)
}

// IsPresenceFile reports whether a file name in a presence directory is a
// worker's presence lock.
func IsPresenceFile(name string) bool {
	return strings.HasPrefix(name, presencePrefix) && strings.HasSuffix(name, LockFile)
}

// LiveObjectPrefix is the object-store prefix (under the store's own) of
// the workers' heartbeat objects.
const LiveObjectPrefix = LiveDirName + "/"
