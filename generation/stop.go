package generation

import "strings"

// stopMatcher finds stop strings in text that arrives in pieces. It
// releases text only once no stop string can start in it: the longest
// suffix of the pending text that is a prefix of some stop string is held
// back until later text settles it. Released text therefore never needs to
// be taken back.
type stopMatcher struct {
	stops []string
	held  string
}

// feed adds text and returns what can be released. matched is the stop
// string found, "" if none; then out ends just before it and the matcher
// must not be fed again. Among stop strings the earliest occurrence wins,
// and at equal positions the first in the request.
func (m *stopMatcher) feed(piece string) (out, matched string) {
	buf := m.held + piece
	at := -1
	for _, s := range m.stops {
		if i := strings.Index(buf, s); i >= 0 && (at < 0 || i < at) {
			at, matched = i, s
		}
	}
	if at >= 0 {
		m.held = ""
		return buf[:at], matched
	}
	keep := m.holdBack(buf)
	m.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], ""
}

// holdBack is the length of the longest suffix of buf that is a proper
// prefix of a stop string: the earliest point where a match could still
// begin (holding only the shortest such suffix would release the start of
// "aba" for the stop "abab"). Stop strings are valid UTF-8 and buf is whole
// characters, so the cut always falls between characters.
func (m *stopMatcher) holdBack(buf string) int {
	best := 0
	for _, s := range m.stops {
		for n := min(len(s)-1, len(buf)); n > best; n-- {
			if strings.HasPrefix(s, buf[len(buf)-n:]) {
				best = n
				break
			}
		}
	}
	return best
}

// flush releases the held text: no more text is coming, so none of it can
// start a stop string.
func (m *stopMatcher) flush() string {
	out := m.held
	m.held = ""
	return out
}
