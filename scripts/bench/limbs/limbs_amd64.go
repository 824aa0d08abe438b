package limbs

// q4slab adds one 64-column slab of x·W to y: groups groups of 32 rows,
// each four octs of 256 packed bytes, limbs 96 bytes a group, s and o 64
// floats a group, sum one float a group.
//
//go:noescape
func q4slab(y *float32, q *byte, limbs *int8, s, o, sum *float32, groups int)
