package benchharness

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// socketPorts is the local TCP ports of process pid's sockets (Linux:
// its /proc/<pid>/fd links to socket inodes, looked up in its network
// namespace's tcp tables). The fake sees these ports as the workers'
// client addresses.
func socketPorts(pid int) map[int]bool {
	base := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(base, "fd"))
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(base, "fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		addTablePorts(filepath.Join(base, "net", table), inodes, ports)
	}
	return ports
}

// addTablePorts reads one /proc/net/tcp table: "sl local_address
// rem_address st … inode" with addresses as hex ip:port.
func addTablePorts(path string, inodes map[string]bool, ports map[int]bool) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || !inodes[fields[9]] {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil {
			ports[int(p)] = true
		}
	}
}

// freeze stops process pid (SIGSTOP) so that its sockets hold still while
// they are read: a victim killed after its ports were sampled could open
// a connection in between, get an answer on it and die with that answer
// unstored, and the answer's port would then belong to nobody.
func freeze(pid int) { _ = syscall.Kill(pid, syscall.SIGSTOP) }
