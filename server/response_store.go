package server

import (
	"container/list"
	"sync"
)

// Bounds of the responses kept for previous_response_id and item
// references (Config.StoredResponses, Config.StoredResponseBytes).
const (
	defaultStoredResponses     = 1000
	defaultStoredResponseBytes = 64 << 20
)

// storedResponse is a finished /v1/responses answer as a later request
// continues it: the conversation it ended (its input messages, after any
// it continued, without its instructions, which OpenAI does not carry
// over) and its output message, whose item id may be referenced.
type storedResponse struct {
	id     string
	itemID string
	msgs   []ChatMessage // the conversation, the output message last
	bytes  int64
}

// responseStore keeps responses in memory, as vLLM does, bounded by count
// and by the bytes of their text: the oldest go first. An id it does not
// hold (never stored, stored with store:false, or evicted) is not found.
// Safe for concurrent use.
type responseStore struct {
	mu        sync.Mutex
	maxCount  int
	maxBytes  int64
	bytes     int64
	order     *list.List               // oldest first, of *storedResponse
	responses map[string]*list.Element // by response id
	items     map[string]*list.Element // by output item id
}

func newResponseStore(maxCount int, maxBytes int64) *responseStore {
	return &responseStore{maxCount: maxCount, maxBytes: maxBytes, order: list.New(),
		responses: map[string]*list.Element{}, items: map[string]*list.Element{}}
}

// put stores r, evicting the oldest until the bounds hold; a response
// larger than the byte bound alone is not stored.
func (s *responseStore) put(r *storedResponse) {
	r.bytes = 0
	for _, m := range r.msgs {
		r.bytes += int64(len(m.Role) + len(m.Content) + len(m.Name))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.bytes > s.maxBytes || s.maxCount <= 0 {
		return
	}
	if old, ok := s.responses[r.id]; ok {
		s.remove(old)
	}
	for s.order.Len() >= s.maxCount || s.bytes+r.bytes > s.maxBytes {
		s.remove(s.order.Front())
	}
	el := s.order.PushBack(r)
	s.responses[r.id], s.items[r.itemID] = el, el
	s.bytes += r.bytes
}

func (s *responseStore) remove(el *list.Element) {
	r := s.order.Remove(el).(*storedResponse)
	delete(s.responses, r.id)
	delete(s.items, r.itemID)
	s.bytes -= r.bytes
}

// conversation is the stored conversation response id ended, or false.
func (s *responseStore) conversation(id string) ([]ChatMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.responses[id]
	if !ok {
		return nil, false
	}
	return append([]ChatMessage(nil), el.Value.(*storedResponse).msgs...), true
}

// item is the output message whose item id is id, or false.
func (s *responseStore) item(id string) (ChatMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.items[id]
	if !ok {
		return ChatMessage{}, false
	}
	msgs := el.Value.(*storedResponse).msgs
	return msgs[len(msgs)-1], true
}
