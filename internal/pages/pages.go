// Package pages maps a fresh buffer's memory before it is written. A load
// writes hundreds of megabytes into new heap memory, and first touching
// each 4 KB page costs a fault: under a hypervisor 6-12 µs each, the
// larger part of a float16 model's load (Qwen2.5-0.5B: 268,000 faults,
// 3.2 s of system time). Asking the kernel for the pages of a whole buffer
// in one call, in 2 MB pages where it can give them, does the same work
// without a trap a page.
package pages

// Big is the size from which a buffer is worth mapping in one call.
const Big = 1 << 20
