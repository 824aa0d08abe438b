package server_test

import (
	"bufio"
	"io"
	"strings"
)

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	Name string // "message" when the stream gave no event: line
	Data string
}

// sseReader is an SSE client per the WHATWG EventSource parsing rules:
// lines end in LF, CR or CRLF; "event", "data" and comment lines; data
// lines join with LF; a blank line dispatches; an event with no data is
// dropped.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

func (s *sseReader) line() (string, error) {
	var b strings.Builder
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if b.Len() > 0 && err == io.EOF {
				return b.String(), nil
			}
			return "", err
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			if next, err := s.r.Peek(1); err == nil && next[0] == '\n' {
				_, _ = s.r.ReadByte()
			}
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}

// Next returns the next event, or io.EOF at the end of the stream.
func (s *sseReader) Next() (sseEvent, error) {
	var name string
	var data []string
	for {
		line, err := s.line()
		if err != nil {
			return sseEvent{}, err
		}
		if line == "" {
			if data == nil {
				name = ""
				continue
			}
			if name == "" {
				name = "message"
			}
			return sseEvent{Name: name, Data: strings.Join(data, "\n")}, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
		}
	}
}
