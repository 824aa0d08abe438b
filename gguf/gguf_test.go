package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const peerFile = "../testdata/tokenizer/ggml-vocab-gpt-2.gguf"

func TestPeerFile(t *testing.T) {
	f, err := Open(peerFile)
	require.NoError(t, err)
	defer f.Close()

	assert.EqualValues(t, 3, f.Version)
	assert.Empty(t, f.Tensors)
	assert.EqualValues(t, 32, f.Alignment)

	arch, err := f.String("general.architecture")
	require.NoError(t, err)
	assert.Equal(t, "gpt2", arch)
	model, err := f.String("tokenizer.ggml.model")
	require.NoError(t, err)
	assert.Equal(t, "gpt2", model)
	ctx, err := f.Int("gpt2.context_length")
	require.NoError(t, err)
	assert.EqualValues(t, 1024, ctx)
	eos, err := f.Int("tokenizer.ggml.eos_token_id")
	require.NoError(t, err)
	assert.EqualValues(t, 50256, eos)

	tokens, err := f.Strings("tokenizer.ggml.tokens")
	require.NoError(t, err)
	assert.Len(t, tokens, 50257)
	assert.Equal(t, "<|endoftext|>", tokens[50256])
	merges, err := f.Strings("tokenizer.ggml.merges")
	require.NoError(t, err)
	assert.Len(t, merges, 50000)
	assert.Equal(t, "Ġ t", merges[0])
	types, err := f.Ints("tokenizer.ggml.token_type")
	require.NoError(t, err)
	assert.Len(t, types, 50257)

	_, err = f.String("no.such.key")
	assert.ErrorIs(t, err, ErrNoKey)
	_, err = f.String("gpt2.context_length")
	assert.ErrorContains(t, err, "want string")
}

// builder writes GGUF bytes for tests; a real writer comes with a later issue.
type builder struct{ bytes.Buffer }

func (b *builder) u32(v uint32) *builder { binary.Write(&b.Buffer, binary.LittleEndian, v); return b }
func (b *builder) u64(v uint64) *builder { binary.Write(&b.Buffer, binary.LittleEndian, v); return b }
func (b *builder) str(s string) *builder { b.u64(uint64(len(s))); b.WriteString(s); return b }
func (b *builder) header(version uint32, nTensors, nKV uint64) *builder {
	b.WriteString("GGUF")
	return b.u32(version).u64(nTensors).u64(nKV)
}
func (b *builder) kv(key string, t ValueType) *builder { return b.str(key).u32(uint32(t)) }
func (b *builder) pad(align int) *builder {
	for b.Len()%align != 0 {
		b.WriteByte(0)
	}
	return b
}

func TestAllValueTypesAndTensors(t *testing.T) {
	b := new(builder).header(3, 2, 15)
	b.kv("u8", TypeUint8).WriteByte(200)
	b.kv("i8", TypeInt8).WriteByte(0xff)
	b.kv("u16", TypeUint16).Write([]byte{0x34, 0x12})
	b.kv("i16", TypeInt16).Write([]byte{0xfe, 0xff})
	b.kv("u32", TypeUint32).u32(70000)
	b.kv("i32", TypeInt32).u32(math.MaxUint32)
	b.kv("f32", TypeFloat32).u32(math.Float32bits(1.5))
	b.kv("bool", TypeBool).WriteByte(1)
	b.kv("str", TypeString).str("héllo")
	b.kv("u64", TypeUint64).u64(1 << 40)
	b.kv("i64", TypeInt64).u64(math.MaxUint64)
	b.kv("f64", TypeFloat64).u64(math.Float64bits(-2.25))
	b.kv("general.alignment", TypeUint32).u32(64)
	b.kv("arr", TypeArray).u32(uint32(TypeInt32)).u64(3).u32(1).u32(2).u32(3)
	b.kv("nested", TypeArray).u32(uint32(TypeArray)).u64(2).
		u32(uint32(TypeString)).u64(2).str("a").str("bc").
		u32(uint32(TypeBool)).u64(1)
	b.WriteByte(0)
	// Tensor infos: a 2x3 F32 at 0 and a 32-element Q8_0 at 64.
	b.str("w").u32(2).u64(2).u64(3).u32(uint32(GGMLTypeF32)).u64(0)
	b.str("q").u32(1).u64(32).u32(uint32(GGMLTypeQ8_0)).u64(64)
	b.pad(64)
	dataStart := b.Len()
	for i := range 24 {
		b.WriteByte(byte(i))
	}
	b.pad(64)
	b.Write(bytes.Repeat([]byte{7}, 34))

	data := b.Bytes()
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)

	want := map[string]any{
		"u8": uint8(200), "i8": int8(-1), "u16": uint16(0x1234), "i16": int16(-2),
		"u32": uint32(70000), "i32": int32(-1), "f32": float32(1.5), "bool": true,
		"str": "héllo", "u64": uint64(1 << 40), "i64": int64(-1), "f64": -2.25,
	}
	for k, w := range want {
		v, ok := f.Get(k)
		require.True(t, ok, k)
		assert.Equal(t, w, v.V, k)
	}
	ints, err := f.Ints("arr")
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 3}, ints)
	nested, err := f.Array("nested")
	require.NoError(t, err)
	inner := nested.Values.([]Array)
	assert.Equal(t, []string{"a", "bc"}, inner[0].Values)
	assert.Equal(t, []bool{false}, inner[1].Values)
	assert.Equal(t, "str", f.KV[8].Key, "file order kept")

	assert.EqualValues(t, 64, f.Alignment)
	assert.EqualValues(t, dataStart, f.DataOffset)
	w, ok := f.Tensor("w")
	require.True(t, ok)
	assert.Equal(t, []uint64{2, 3}, w.Dims)
	assert.EqualValues(t, 24, w.Size)
	assert.EqualValues(t, 6, w.Elements())
	raw, err := f.TensorData("w")
	require.NoError(t, err)
	assert.Equal(t, data[dataStart:dataStart+24], raw)
	raw, err = f.TensorData("q")
	require.NoError(t, err)
	assert.Equal(t, bytes.Repeat([]byte{7}, 34), raw)
	_, err = f.TensorData("missing")
	assert.Error(t, err)

	// In memory, tensor data aliases the file's bytes.
	fm, err := ReadBytes(data)
	require.NoError(t, err)
	raw, err = fm.TensorData("w")
	require.NoError(t, err)
	assert.Equal(t, data[dataStart:dataStart+24], raw)
	assert.Same(t, &data[dataStart], &raw[0])
}

func TestBadInputs(t *testing.T) {
	valid := func() *builder { return new(builder).header(3, 0, 1) }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"wrong magic", []byte("GGML\x03\x00\x00\x00"), "bad magic"},
		{"version 1", new(builder).header(1, 0, 0).Bytes(), "unsupported version 1"},
		{"version 4", new(builder).header(4, 0, 0).Bytes(), "unsupported version 4"},
		{"big endian", new(builder).header(3<<24, 0, 0).Bytes(), "big-endian"},
		{"truncated header", []byte("GGUF\x03\x00\x00\x00\x00\x00"), "tensor count"},
		{"kv count past end", new(builder).header(3, 0, 1000).Bytes(), "metadata kv count"},
		{"tensor count past end", new(builder).header(3, 1<<40, 0).Bytes(), "tensor count"},
		{"key length past end", valid().u64(1 << 50).u64(0).u64(0).Bytes(), "metadata key #0: string length 1125899906842624 past end"},
		{"string value past end", valid().kv("name", TypeString).u64(100).Bytes(), "key name: string length 100 past end"},
		{"array count past end", valid().kv("toks", TypeArray).u32(uint32(TypeString)).u64(1 << 40).Bytes(), "key toks: array count: count 1099511627776 past end"},
		{"array element past end", valid().kv("toks", TypeArray).u32(uint32(TypeString)).u64(2).str("a").u64(9).Bytes(), "key toks: string length 9 past end of file (offset 69, 0 bytes left) (array element 1)"},
		{"unknown value type", valid().kv("x", 13).u64(0).Bytes(), "key x: unknown value type 13"},
		{"unknown element type", valid().kv("x", TypeArray).u32(99).u64(0).Bytes(), "key x: unknown array element type 99"},
		{"truncated value", valid().kv("x", TypeUint64).u32(1).Bytes(), "key x"},
		{"bad bool", valid().kv("x", TypeBool).u8b(2).Bytes(), "bool value 2"},
		{"duplicate key", new(builder).header(3, 0, 2).kv("a", TypeUint8).u8b(1).kv("a", TypeUint8).u8b(1).Bytes(), "duplicate metadata key"},
		{"bad alignment", valid().kv("general.alignment", TypeUint32).u32(3).Bytes(), "power-of-two"},
		{"too many dims", new(builder).header(3, 1, 0).str("t").u32(5).u64(1).u64(1).u64(1).u64(1).u64(1).u32(0).u64(0).Bytes(), "5 dims"},
		{"dims overflow", new(builder).header(3, 1, 0).str("t").u32(2).u64(1 << 40).u64(1 << 40).u32(0).u64(0).Bytes(), "overflows"},
		{"tensor past end", new(builder).header(3, 1, 0).str("t").u32(1).u64(100).u32(0).u64(0).Bytes(), "tensor t: 400 bytes at data offset 0 past end"},
		{"unknown type past end", new(builder).header(3, 1, 0).str("t").u32(1).u64(1).u32(99).u64(1024).Bytes(), "tensor t: 0 bytes at data offset 1024 past end"},
		{"misaligned tensor", new(builder).header(3, 1, 0).str("t").u32(1).u64(1).u32(0).u64(4).Bytes(), "not a multiple of alignment"},
		{"duplicate tensor", new(builder).header(3, 2, 0).str("t").u32(1).u64(1).u32(0).u64(0).str("t").u32(1).u64(1).u32(0).u64(0).Bytes(), "duplicate tensor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data), int64(len(c.data)))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func (b *builder) u8b(v byte) *builder { b.WriteByte(v); return b }

// A reader shorter than its declared size is an I/O error, not a panic.
func TestShortReader(t *testing.T) {
	data := new(builder).header(3, 0, 1).kv("x", TypeString).str("abc").Bytes()
	_, err := Read(bytes.NewReader(data[:20]), int64(len(data)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unexpected EOF")
}

func FuzzRead(f *testing.F) {
	peer, err := os.ReadFile(peerFile)
	if err == nil {
		f.Add(peer[:4096])
	}
	f.Add(new(builder).header(3, 0, 1).kv("x", TypeString).str("abc").Bytes())
	f.Add(new(builder).header(2, 1, 1).kv("general.alignment", TypeUint32).u32(8).
		str("t").u32(1).u64(2).u32(uint32(GGMLTypeF16)).u64(0).pad(8).u32(0).Bytes())
	f.Add(new(builder).header(3, 0, 1).kv("n", TypeArray).u32(uint32(TypeArray)).u64(1).u32(uint32(TypeUint8)).u64(2).u8b(1).u8b(2).Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("error neither ErrInvalid nor EOF: %v", err)
			}
			return
		}
		for _, ti := range file.Tensors {
			if ti.Size >= 0 {
				if _, err := file.TensorData(ti.Name); err != nil {
					t.Fatalf("tensor %s passed bounds check but read failed: %v", ti.Name, err)
				}
			}
		}
		checkRewrite(t, file)
	})
}

// checkRewrite writes what Read returned and reads it back: the writer must
// accept everything the reader does (tensor types of known layout aside),
// and writing is a fixed point: the second write is byte-identical.
func checkRewrite(t *testing.T, file *File) {
	tensors := make([]TensorData, len(file.Tensors))
	for i, ti := range file.Tensors {
		if ti.Size < 0 {
			return
		}
		data, err := file.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		tensors[i] = TensorData{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: data}
	}
	var first bytes.Buffer
	if err := Write(&first, file.KV, tensors); err != nil {
		t.Fatalf("writing back a file Read accepted: %v", err)
	}
	again, err := ReadBytes(first.Bytes())
	if err != nil {
		t.Fatalf("reading back a written file: %v", err)
	}
	for i, ti := range again.Tensors {
		data, err := again.TensorData(ti.Name)
		if err != nil || !bytes.Equal(data, tensors[i].Data) {
			t.Fatalf("tensor %s changed on the round trip (%v)", ti.Name, err)
		}
		tensors[i].Data = data
	}
	var second bytes.Buffer
	if err := Write(&second, again.KV, tensors); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("write is not a fixed point: %d then %d bytes", first.Len(), second.Len())
	}
}
