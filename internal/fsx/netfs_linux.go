//go:build linux

package fsx

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// networkMagic are statfs(2) f_type values of file systems whose writes
// other machines see only once flushed: NFS, SMB/CIFS, Lustre, GPFS,
// CephFS, AFS, 9P and FUSE (sshfs, s3fs, gcsfuse…).
var networkMagic = map[int64]bool{
	0x6969:     true, // NFS
	0x517B:     true, // SMB
	0xFF534D42: true, // CIFS
	0xFE534D42: true, // SMB2
	0x0BD00BD0: true, // Lustre
	0x47504653: true, // GPFS
	0x00C36400: true, // CephFS
	0x5346414F: true, // AFS
	0x01021997: true, // 9P
	0x65735546: true, // FUSE
}

// IsNetworkFS reports whether path (or, when it does not exist yet, its
// nearest existing parent) lies on a network file system.
func IsNetworkFS(path string) bool {
	var st unix.Statfs_t
	for p := path; ; {
		err := unix.Statfs(p, &st)
		if err == nil {
			return networkMagic[int64(st.Type)]
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
}
