package fsx

import "errors"

// ErrLocked says another process holds the lock TryLock asked for.
var ErrLocked = errors.New("locked by another process")

// The locks below are advisory, exclusive and per open file: they bind
// only processes that ask for them (impactbench's own), and the system
// releases them when the file is closed or the process dies, even by
// SIGKILL, so a crash never leaves a stale lock. On Unix they are flock(2)
// locks; on Windows LockFileEx locks of one byte far past the end of any
// real file, so that the lock (mandatory there) never stops another
// process from reading or appending to the file's contents.

// TryLock takes the exclusive lock on f without waiting: ErrLocked when
// another open file holds it.
func TryLock(f lockable) error { return lock(f, false) }

// TryLockShared takes a shared lock on f without waiting: any number of
// opens may hold it at once, and it excludes the exclusive lock (ErrLocked
// while another open holds that). Shards of one benchmark each hold it
// while they run, so a run of the whole benchmark cannot start among them.
func TryLockShared(f lockable) error { return lockAs(f, true, false) }

// Lock takes the exclusive lock on f, waiting for its holder to release it.
func Lock(f lockable) error { return lock(f, true) }

// Unlock releases a lock taken with Lock or TryLock. Closing the file
// releases it too.
func Unlock(f lockable) error { return unlock(f) }

// lockable is an open file (*os.File).
type lockable interface{ Fd() uintptr }
