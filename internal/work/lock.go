package work

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/impactbench/impactbench/internal/callstore"
	"github.com/impactbench/impactbench/internal/cluster"
	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/fault"
	"github.com/impactbench/impactbench/internal/fsx"
	"github.com/impactbench/impactbench/internal/layout"
	"github.com/impactbench/impactbench/internal/llm/ratelimit"
)

// ErrLocked says another process holds the benchmark (or this shard of it).
type ErrLocked struct {
	Bench  string
	Shard  layout.Shard
	Holder string // who holds it: host, pid, start and what it runs
}

// FaultKind: another process holds the benchmark.
func (e *ErrLocked) FaultKind() fault.Kind { return fault.Locked }

func (e *ErrLocked) Error() string {
	what := "benchmark " + e.Bench
	if e.Shard.Active() {
		what = fmt.Sprintf("shard %d/%d of benchmark %s", e.Shard.Index, e.Shard.Count, e.Bench)
	}
	return fmt.Sprintf("%s is being run by another impactbench process (%s); wait for it to finish or stop it — two runs of the same rows would overwrite each other's files",
		what, strings.TrimSpace(e.Holder))
}

// benchLock is what a run holds of its benchmark. A run of every row holds
// the exclusive lock of <cache>/.lock. A shard's run holds a shared lock
// of .lock (shards run side by side; a run of every row cannot start among
// them, nor they beside it) and the exclusive lock of its own
// .lock.shard-i-of-K (a duplicate of the same shard waits or is refused).
// The system releases them when the process dies, even by SIGKILL, so a
// crash never leaves a stale lock; each exclusive lock file names its
// holder (fsx.TakeLock). Workers that share only an object store (each
// its own disk) see none of these files, so a shard's run on one also
// holds the shard's lease in the store (callstore.Lease), with the same
// wait or refusal.
type benchLock struct {
	own    *fsx.HeldLock
	shared *os.File
	lease  *callstore.Lease
}

// lockOptions say which lock a run takes and how.
type lockOptions struct {
	Bench string
	Shard layout.Shard
	// Wait: a held shard lock is waited for (a duplicate worker started
	// by the scheduler), checked every poll; otherwise it is refused.
	Wait bool
	Poll time.Duration
	// Waiting is told once who holds the shard before the wait starts.
	Waiting func(holder string)
	// Store is the benchmark's call store: on object storage a shard's
	// run takes its lease there (nil or a directory store: none).
	Store  *callstore.Store
	Logger *slog.Logger // hears a lease lost to another worker
}

func acquireLock(ctx context.Context, files layout.Bench, o lockOptions) (*benchLock, error) {
	if err := fsx.MkdirAll(files.Cache, fsx.Shared); err != nil {
		return nil, err
	}
	if !o.Shard.Active() {
		own, err := fsx.TakeLock(files.Lock(layout.Shard{}), "benchmark "+o.Bench)
		if err != nil {
			return nil, lockedBy(err, files, o.Bench, layout.Shard{})
		}
		return &benchLock{own: own}, nil
	}
	f, err := fsx.OpenLockFile(files.Lock(layout.Shard{}))
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := fsx.TryLockShared(f); err != nil {
		f.Close()
		if errors.Is(err, fsx.ErrLocked) {
			h, _ := fsx.ReadHolder(files.Lock(layout.Shard{}))
			return nil, &ErrLocked{Bench: o.Bench, Holder: h.String() + " runs every row of it"}
		}
		return nil, fmt.Errorf("lock %s: %w", files.Lock(layout.Shard{}), err)
	}
	l := &benchLock{shared: f}
	label := fmt.Sprintf("benchmark %s shard %d/%d", o.Bench, o.Shard.Index, o.Shard.Count)
	own, err := takeShardLock(ctx, files.Lock(o.Shard), label, o)
	if err != nil {
		l.release()
		return nil, lockedBy(err, files, o.Bench, o.Shard)
	}
	l.own = own
	if err := checkOneCount(files, o.Shard); err != nil {
		l.release()
		return nil, err
	}
	if l.lease, err = takeLease(ctx, label, o); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// takeLease takes the shard's lease in an object store, waiting for its
// holder as takeShardLock does; a held lease not waited for is ErrLocked
// naming its holder.
func takeLease(ctx context.Context, label string, o lockOptions) (*callstore.Lease, error) {
	if o.Store == nil {
		return nil, nil
	}
	l, err := o.Store.TakeLease(ctx, leaseOptions(label, o))
	var le *callstore.LeasedError
	if errors.As(err, &le) {
		return nil, &ErrLocked{Bench: o.Bench, Shard: o.Shard, Holder: le.Holder}
	}
	if err != nil {
		return nil, fmt.Errorf("lease shard %d/%d of %s: %w", o.Shard.Index, o.Shard.Count, o.Bench, err)
	}
	if other := heldOfOtherCounts(ctx, o.Store, o.Shard.Count); len(other) > 0 && o.Logger != nil {
		o.Logger.Warn(fmt.Sprintf("the store holds shards of another count, held now (running, or killed): one study has one count — give every worker the same %s (--shards); rows both splits reach may be paid twice, and merge --from-store cannot say which index to run again", cluster.EnvShards),
			"benchmark", o.Bench, "shard", fmt.Sprintf("%d/%d", o.Shard.Index, o.Shard.Count), "held", strings.Join(FirstN(other, 4), ", "))
	}
	return l, nil
}

// heldOfOtherCounts names the leases of the store of a shard count other
// than count that are held (a worker given another count runs beside this
// one, or was killed): on an object store nothing refuses such a worker,
// each seeing only its own lock files. One listing, and a read of each
// lease of another count only; a split of another count that ended (an
// earlier study on this store) is not named.
func heldOfOtherCounts(ctx context.Context, st *callstore.Store, count int) []string {
	names, err := st.LeaseNames(ctx)
	if err != nil {
		return nil
	}
	var held []string
	for _, name := range names {
		s, ok := layout.CutLeaseName(name)
		if !ok || s.Count == count {
			continue
		}
		if ls, ok, err := st.LeaseState(ctx, name); err == nil && ok && !ls.Released {
			held = append(held, name)
		}
	}
	return held
}

// leaseOptions are the options of the shard's lease. Its logger names the
// benchmark: a study's benchmarks each hold a lease of the same name
// (shard-i-of-K under each one's prefix), and a worker paused past the TTL
// loses them all, one warning each.
func leaseOptions(label string, o lockOptions) callstore.LeaseOptions {
	var log *slog.Logger
	if o.Logger != nil {
		log = o.Logger.With("benchmark", o.Bench)
	}
	return callstore.LeaseOptions{
		Name: o.Shard.LeaseName(), Label: label,
		Wait: o.Wait, Poll: o.Poll, Waiting: o.Waiting, Logger: log,
	}
}

// takeShardLock takes a shard's exclusive lock, waiting for its holder
// with o.Wait (polling, so that an interrupt ends the wait).
func takeShardLock(ctx context.Context, path, label string, o lockOptions) (*fsx.HeldLock, error) {
	told := false
	for {
		own, err := fsx.TakeLock(path, label)
		var le *fsx.LockedError
		if err == nil || !o.Wait || !errors.As(err, &le) {
			return own, err
		}
		if !told && o.Waiting != nil {
			o.Waiting(holderText(le))
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(max(o.Poll, 10*time.Millisecond)):
		}
	}
}

// lockedBy turns a held lock into an ErrLocked naming its holders: for the
// benchmark's lock held by shards, every shard that runs.
func lockedBy(err error, files layout.Bench, bench string, s layout.Shard) error {
	var le *fsx.LockedError
	if !errors.As(err, &le) {
		return err
	}
	holder := holderText(le)
	if !s.Active() {
		shards, err := runningShards(files)
		if err != nil {
			return err
		}
		if len(shards) > 0 {
			holder = strings.Join(FirstN(shards, 4), "; ")
		}
	}
	return &ErrLocked{Bench: bench, Shard: s, Holder: holder}
}

func holderText(le *fsx.LockedError) string {
	if !le.Known {
		return "holder unknown"
	}
	return le.Holder.String()
}

// runningShards names the shards of the benchmark whose lock is held now:
// "shard 3/16: pid 42, host node-7, …".
func runningShards(files layout.Bench) ([]string, error) {
	locks, err := files.ShardLocks()
	if err != nil {
		return nil, err
	}
	var out []string
	for path, s := range locks {
		h, held := fsx.LockHeld(path)
		if !held {
			continue
		}
		out = append(out, fmt.Sprintf("shard %d/%d: %s", s.Index, s.Count, h))
	}
	sort.Strings(out)
	return out, nil
}

// checkOneCount refuses a shard of a split other than the one running or
// waiting to be merged: rows of a 4-way and an 8-way split overlap, and
// merge could combine neither. Shard outputs older than the merged file
// beside them were merged already and do not count.
func checkOneCount(files layout.Bench, s layout.Shard) error {
	locks, err := files.ShardLocks()
	if err != nil {
		return err
	}
	for path, o := range locks {
		if h, held := fsx.LockHeld(path); o.Count != s.Count && held {
			return fault.Usagef("shard %d/%d of this benchmark is running (%s): one study has one shard count, and this worker was given %d — use --shards %d (or %s) for every worker",
				o.Index, o.Count, h, s.Count, o.Count, "IMPACTBENCH_SHARDS")
		}
	}
	targets, err := fsx.ReadDir(files.RunsDir(), layout.MaxRunEntries, fs.DirEntry.IsDir)
	var many *fsx.TooManyEntriesError
	if errors.As(err, &many) {
		return err
	}
	for _, t := range targets {
		if !t.IsDir() {
			continue
		}
		dir := filepath.Join(files.RunsDir(), t.Name())
		for _, name := range []string{layout.ConversationsFile, layout.ScoresFile} {
			found, _ := layout.ShardFiles(dir, name)
			merged, _ := os.Stat(filepath.Join(dir, name))
			for path, o := range found {
				if o.Count == s.Count {
					continue
				}
				if st, err := os.Stat(path); err == nil && (merged == nil || st.ModTime().After(merged.ModTime())) {
					return fault.Usagef("%s is from a %d-way split not merged yet, and this worker is shard %d/%d: finish and merge that split (impactbench merge) or remove its shard files before starting another",
						path, o.Count, s.Index, s.Count)
				}
			}
		}
	}
	return nil
}

func (l *benchLock) release() {
	if l == nil {
		return
	}
	// Released first, so a waiting duplicate starts at once; a release
	// that fails leaves the lease to go stale after its TTL.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = l.lease.Release(ctx)
	cancel()
	_ = l.own.Release()
	if l.shared != nil {
		_ = fsx.Unlock(l.shared)
		l.shared.Close()
	}
}

// storeDir is the directory of a store: configured as a path or a
// file:// URL (ok), not on object storage.
func storeDir(store string) (string, bool) {
	if store != "" && !strings.Contains(store, "://") {
		return store, true
	}
	return strings.CutPrefix(store, "file://")
}

// presenceDir is where workers on one directory show themselves: beside
// the shared store when one is configured as a directory, else in the
// project's .cache (the documented Job mounts the project into every pod).
func presenceDir(projectDir, store string) string {
	if dir, ok := storeDir(store); ok {
		return layout.PresenceDir(projectDir, dir)
	}
	return layout.PresenceDir(projectDir, "")
}

// followWorkers makes this worker present to the others of its study —
// a lock held in a shared directory, or a heartbeat object on the object
// store — and divides the provider limits by how many run now (1…Workers;
// ratelimit.Registry.FollowLive). Nothing to do for a worker alone, with
// a rate backend (Redis shares the limit exactly), a dry run or a replay.
// What it starts, Close stops.
func (e *Env) followWorkers(ctx context.Context, projectDir string) error {
	o := e.Opts
	if o.Workers <= 1 || o.RateBackend != "" || o.DryRun || o.Replay {
		return nil
	}
	var count ratelimit.LiveCount
	var leave io.Closer
	hb, err := callstore.OpenHeartbeat(ctx, o.Store, callstore.HeartbeatOptions{})
	switch {
	case err != nil:
		var ue *callstore.URLError
		if errors.As(err, &ue) && o.StoreFrom != "" {
			ue.Key = o.StoreFrom
		}
		return fault.AsInput(err)
	case hb != nil:
		if err := hb.Beat(ctx); err != nil {
			_ = hb.Close()
			return err
		}
		count, leave = hb.Count, hb
	default:
		dp, err := cluster.JoinDir(presenceDir(projectDir, o.Store), "worker "+strings.TrimPrefix(o.Shard.Suffix(), "."))
		if err != nil {
			return err
		}
		count, leave = dp.Count, dp
	}
	fctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if hb != nil {
		wg.Go(func() { hb.Run(fctx) })
	}
	wg.Go(func() { e.Models.FollowLive(fctx, count, ratelimit.FollowOptions{}) })
	e.closers = append(e.closers, closerFunc(func() error {
		cancel()
		wg.Wait()
		return leave.Close()
	}))
	return nil
}

// ShardFinished records that this shard's run did all its work, so that
// its lease in an object store is released as finished: a merge from the
// store then tells it from a worker stopped before the end (a time limit's
// SIGTERM), which releases its lease too.
func (b *Bench) ShardFinished() {
	if b.lock != nil {
		b.lock.lease.MarkFinished()
	}
}

// closerFunc is a function as an io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// UnfinishedShards says which shards of a study on object storage a merge
// from the store lacks, from the leases its workers left there (one per
// shard that started, named shard-i-of-K): the shard count, the shards
// that never took one (never ran) and those whose lease was never
// released as finished (killed, stopped by a signal before the end, or
// still running), with how to run them again. "" when the store cannot
// tell: a store in a directory, workers that were not shards, or every
// shard's lease finished.
func (b *Bench) UnfinishedShards(ctx context.Context) string {
	if b.Store == nil {
		return ""
	}
	leases, err := b.Store.Leases(ctx)
	if err != nil {
		return ""
	}
	if len(leases) == 0 {
		if b.Store.Dir() != "" {
			return "" // a directory store: no leases to tell by
		}
		// Every shard on object storage leaves its lease: none at all is
		// most often a mistyped bucket or prefix, not a study unrun.
		return fmt.Sprintf("the store %s holds no shard's lease: if the study ran in shards, this is not the store its workers wrote — check the bucket and prefix (%s, store:)", b.Store.Location(), config.EnvStore)
	}
	count := 0
	state := map[int]bool{} // index → finished
	var counts []int
	for _, l := range leases {
		s, ok := layout.CutLeaseName(l.Name)
		if !ok {
			return "" // not a split's: nothing to say for sure
		}
		if !slices.Contains(counts, s.Count) {
			counts = append(counts, s.Count)
		}
		count = s.Count
		state[s.Index] = l.Finished
	}
	if len(counts) > 1 {
		// Workers given different counts (on an object store nothing
		// refuses them: each sees only its own lock files), or an earlier
		// study of another count on this store: which rows are missing
		// cannot be said per index.
		slices.Sort(counts)
		says := make([]string, len(counts))
		for i, n := range counts {
			says[i] = strconv.Itoa(n)
		}
		return fmt.Sprintf("the store holds shards of %d different counts (%s): if this study's workers were given different counts (%s, --shards), run every index of the study's one count again — what the store holds is reused, not paid again — then merge",
			len(counts), strings.Join(says, " and "), cluster.EnvShards)
	}
	var none, held, all []string
	for i := range count {
		finished, ok := state[i]
		switch {
		case !ok:
			none = append(none, strconv.Itoa(i))
		case !finished:
			held = append(held, strconv.Itoa(i))
		default:
			continue
		}
		all = append(all, strconv.Itoa(i))
	}
	if len(all) == 0 {
		return ""
	}
	var says []string
	if len(none) > 0 {
		says = append(says, fmt.Sprintf("shard(s) %s of %d have no outputs in the store", strings.Join(none, ", "), count))
	}
	if len(held) > 0 {
		says = append(says, fmt.Sprintf("shard(s) %s of %d did not finish (killed, stopped, or still running)", strings.Join(held, ", "), count))
	}
	return fmt.Sprintf("%s: run index(es) %s again (Slurm: sbatch --array=%s study.sbatch; Kubernetes, or by hand: the study's command with --shard <index>/%d), then merge",
		strings.Join(says, "; "), strings.Join(all, ", "), strings.Join(all, ","), count)
}
