// Package kvcache holds the keys and values a model's sequences have
// seen, for its forward pass to attend to. It is a package of its own,
// not part of the model's, because what it does is memory management that
// knows nothing of any model family but its shape (Shape): a block pool
// whose memory follows the positions held rather than sequences × context
// (Pool), a bound with reservations so a server never runs a sequence out
// of blocks half way (Cache.Reserve), prefix sharing that lets a prompt
// reuse, bit for bit, the blocks of an earlier one with the same start
// (Cache.ReusePrefix), spare blocks whose memory stays mapped a while
// for the next sequence instead of faulting in afresh (spare.go), and,
// for a model whose every layer has a sliding window, blocks given back
// once every layer's window has left them (Cache.Release), so a long
// generation holds about a window's positions.
//
// A forward pass drives a cache in three steps: Grow makes room for the
// pass's positions, Store (or Overwrite) writes each layer's keys and
// values there, and Commit makes them part of the sequence once the whole
// pass succeeded; attention reads them block by block (BlockKeys,
// BlockValues).
package kvcache
