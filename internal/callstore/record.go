package callstore

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"strconv"
	"time"
)

// A segment is one writer's append-only file of records, one per line:
//
//	<header> TAB <JSON body> TAB <CRC-32C of header TAB body, 8 hex digits> LF
//
// JSON never holds a raw TAB or LF (encoding/json escapes them), so a
// line splits unambiguously. The header is a few space-separated words
// that the index reads without decoding the body:
//
//	h <format> <writer>                       the segment's first line
//	c <unit> <base> <key>                     a call's answer (body: Entry)
//	e <unit> <rev> <r|x> <unix ms>            an event: a result (body:
//	                                          resultBody) or a reset (--force)
//
// <unit> is the unit's last name element (the directory holds the rest),
// <base> the revision of the unit's latest event its writer knew when it
// made the call. A line whose checksum fails (a torn tail, a block of a
// crashed client that never reached the server) is skipped, never trusted.
const segFormat = "ib-seg-1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Event kinds.
const (
	evResult = 'r'
	evReset  = 'x'
)

// resultBody is an event's JSON body.
type resultBody struct {
	Result    json.RawMessage `json:"result,omitempty"`
	ResultKey string          `json:"result_key,omitempty"`
}

// encodeResultBody is json.Marshal(resultBody{ev.Result, ev.ResultKey}).
// A result json.Marshal made is embedded as it is: Marshal would scan and
// copy it once more only to compact and escape what already is (a
// conversation, several kilobytes, on every commit).
func encodeResultBody(ev event) ([]byte, error) {
	if !ev.Marshaled {
		return json.Marshal(resultBody{Result: ev.Result, ResultKey: ev.ResultKey})
	}
	b := make([]byte, 0, len(ev.Result)+len(ev.ResultKey)+32)
	b = append(b, '{')
	if len(ev.Result) > 0 {
		b = append(b, `"result":`...)
		b = append(b, ev.Result...)
	}
	if ev.ResultKey != "" {
		k, err := json.Marshal(ev.ResultKey)
		if err != nil {
			return nil, err
		}
		if len(ev.Result) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"result_key":`...)
		b = append(b, k...)
	}
	return append(b, '}'), nil
}

// encodeLine frames header and body as a segment line.
func encodeLine(header string, body []byte) []byte {
	line := make([]byte, 0, len(header)+len(body)+12)
	line = append(line, header...)
	line = append(line, '\t')
	line = append(line, body...)
	sum := crc32.Checksum(line, castagnoli)
	line = append(line, '\t')
	line = hex.AppendEncode(line, []byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
	return append(line, '\n')
}

// splitLine checks a line (without its LF) and returns its header and
// body; ok is false for a line that is torn or damaged.
func splitLine(line []byte) (header, body []byte, ok bool) {
	i := bytes.IndexByte(line, '\t')
	j := bytes.LastIndexByte(line, '\t')
	if i < 0 || j <= i || len(line)-j-1 != 8 {
		return nil, nil, false
	}
	var want [4]byte
	if _, err := hex.Decode(want[:], line[j+1:]); err != nil {
		return nil, nil, false
	}
	sum := crc32.Checksum(line[:j], castagnoli)
	if sum != uint32(want[0])<<24|uint32(want[1])<<16|uint32(want[2])<<8|uint32(want[3]) {
		return nil, nil, false
	}
	return line[:i], line[i+1 : j], true
}

// header is a parsed record header.
type header struct {
	kind  byte // 'h', 'c' or 'e'
	unit  string
	num   int   // base of a call, rev of an event
	ev    byte  // evResult or evReset
	at    int64 // unix ms of an event
	key   string
	extra string // h: format
}

func parseHeader(h []byte) (header, bool) {
	f := bytes.Fields(h)
	if len(f) < 3 || len(f[0]) != 1 {
		return header{}, false
	}
	out := header{kind: f[0][0]}
	switch out.kind {
	case 'h':
		out.extra = string(f[1])
		return out, true
	case 'c':
		if len(f) != 4 {
			return header{}, false
		}
		out.key = string(f[3])
	case 'e':
		if len(f) != 5 || len(f[3]) != 1 || (f[3][0] != evResult && f[3][0] != evReset) {
			return header{}, false
		}
		out.ev = f[3][0]
		at, err := strconv.ParseInt(string(f[4]), 10, 64)
		if err != nil {
			return header{}, false
		}
		out.at = at
	default:
		return header{}, false
	}
	n, err := strconv.Atoi(string(f[2]))
	if err != nil || n < -1 {
		return header{}, false
	}
	out.unit, out.num = string(f[1]), n
	return out, true
}

func callHeader(unit string, base int, key string) string {
	return "c " + unit + " " + strconv.Itoa(base) + " " + key
}

func eventHeader(unit string, rev int, kind byte, at time.Time) string {
	return "e " + unit + " " + strconv.Itoa(rev) + " " + string(kind) + " " + strconv.FormatInt(at.UnixMilli(), 10)
}
