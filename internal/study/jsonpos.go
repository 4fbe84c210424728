package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// jsonLines maps each value's path in a JSON document (areas[0].name,
// [3].metrics[1]) to the 1-based line it starts on, so messages about a
// decoded value can point into the file.
type jsonLines map[string]int

// indexJSON walks data once and records where every value starts. It
// returns an error naming the line for malformed JSON.
func indexJSON(data []byte) (jsonLines, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	out := jsonLines{}
	lineAt := func(off int64) int {
		for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n:,"), data[off]) >= 0 {
			off++
		}
		return 1 + bytes.Count(data[:min(off, int64(len(data)))], []byte("\n"))
	}
	var walk func(path string, depth int) error
	walk = func(path string, depth int) error {
		if depth > 64 {
			return errors.New("nested more than 64 levels deep")
		}
		out[path] = lineAt(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if err := walk(joinPath(path, key), depth+1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	if err := walk("", 0); err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("line %d: file ends early (truncated JSON)", lineAt(int64(len(data))))
		}
		return nil, fmt.Errorf("line %d: malformed JSON: %v", lineAt(off), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("line %d: unexpected data after the JSON value", lineAt(dec.InputOffset()))
	}
	return out, nil
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string { return parent + "[" + strconv.Itoa(i) + "]" }

// line is the line of path, or of its nearest recorded ancestor.
func (l jsonLines) line(path string) int {
	for p := path; ; {
		if n, ok := l[p]; ok {
			return n
		}
		i := max(bytes.LastIndexByte([]byte(p), '.'), bytes.LastIndexByte([]byte(p), '['))
		if i <= 0 {
			return l[""]
		}
		p = p[:i]
	}
}
