package cli

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// view and publish --serve on an address something else holds say what to
// do (the flag that picks another), not only "bind: address already in
// use".
func TestServingOnATakenAddressNamesTheFlag(t *testing.T) {
	dir := studyProject(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for _, args := range [][]string{
		{"view", "--addr", addr},
		{"publish", "-o", filepath.Join(dir, "site"), "--serve", "--addr", addr},
	} {
		code, _, errs := run(t, dir, args...)
		if code == 0 || !strings.Contains(errs, "address already in use") || !strings.Contains(errs, "--addr 127.0.0.1:PORT") {
			t.Errorf("%v on a taken address: exit %d, want a failure naming --addr; stderr %q", args, code, errs)
		}
	}
}
