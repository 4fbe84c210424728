package export

import (
	"path/filepath"

	"github.com/impactbench/impactbench/internal/artifacts"
	"github.com/impactbench/impactbench/internal/human"
	"github.com/impactbench/impactbench/internal/layout"
)

// Messages is the messages table of one benchmark, ready to stream.
type Messages struct {
	src  Source
	runs []runDir
}

// OpenMessages finds the conversations.json files to export.
func OpenMessages(src Source) (*Messages, error) {
	runs, err := listRuns(src)
	if err != nil {
		return nil, err
	}
	m := &Messages{src: src}
	for _, r := range runs {
		if isFile(r.conversations) || isFile(layout.Run{Dir: filepath.Dir(r.conversations)}.HumanConversations()) {
			m.runs = append(m.runs, r)
		}
	}
	if len(m.runs) == 0 {
		return nil, nothingYet("%s: no %s to export: run `impactbench simulate %s` first", layout.Bench{Dir: src.Dir}.RunsDir(), layout.ConversationsFile, src.name())
	}
	return m, nil
}

// Columns returns the table's columns.
func (m *Messages) Columns() []Column { return MessageColumns() }

// Each streams one row per transcript message to sink, reading one
// conversation at a time. An error reading an input is an *InputError; an
// error from sink is returned as it is.
func (m *Messages) Each(sink Sink) error {
	row := make(Row, len(messageColumns))
	for _, rd := range m.runs {
		if isFile(rd.conversations) {
			err := artifacts.EachConversation(rd.conversations, func(_ int, c artifacts.Conversation) error {
				return m.emit(sink, row, rd.target, SourceSimulated, c)
			})
			if err != nil {
				return inputErr(err)
			}
		}
		convs, _, err := human.Open(m.src.Dir).List(rd.target)
		if err != nil {
			return inputErr(err)
		}
		for _, c := range convs { // drafts too: every message people sent
			if err := m.emit(sink, row, rd.target, SourceHuman, c.Conversation); err != nil {
				return err
			}
		}
	}
	return nil
}

// emit writes one row per message of c.
func (m *Messages) emit(sink Sink, row Row, target, source string, c artifacts.Conversation) error {
	row[0], row[1] = m.src.name(), target
	row[2], row[3], row[4], row[5] = convIDOf(c.ConvID, c.ID, target, c.Sample), source, c.ID, int64(c.Sample)
	turn := 0
	for i, t := range c.Transcript {
		if t.Role == "user" || turn == 0 {
			turn++
		}
		row[6], row[7], row[8], row[9] = int64(i), int64(turn), t.Role, t.Content
		if err := sink.write(row); err != nil {
			return err
		}
	}
	return nil
}
