//go:build llamacpp

package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
*/
import "C"

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"
)

// geluTable writes the float16 GELU table of the CPU backend llama.cpp
// loaded for a model (ggml_table_gelu_f16, filled by ggml_cpu_init), as
// 65536 little-endian uint16 indexed by the input's float16 bits, so that
// dump_references.py --emulate llamacpp-cpu can be checked against the
// very table the library reads, not only its source.
func geluTable(args []string) error {
	fs := flag.NewFlagSet("gelu-table", flag.ContinueOnError)
	model := fs.String("model", "", "GGUF file (a context is made on it, which loads and initialises the CPU backend)")
	out := fs.String("out", "", "file to write")
	openEngine := engineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" || *out == "" {
		return errors.New("gelu-table: -model and -out are required")
	}
	return withContext(openEngine, *model, func(*engine, unsafe.Pointer, ctxOptions) error {
		return writeGeluTable(*out)
	})
}

// writeGeluTable copies the loaded CPU backend's table to out.
func writeGeluTable(out string) error {
	lib, err := loadedCPUBackend()
	if err != nil {
		return err
	}
	// Already loaded: RTLD_NOLOAD returns the backend's own handle.
	path := C.CString(lib)
	defer C.free(unsafe.Pointer(path))
	h := C.dlopen(path, C.RTLD_NOW|C.RTLD_NOLOAD)
	if h == nil {
		return fmt.Errorf("dlopen %s: %s", lib, C.GoString(C.dlerror()))
	}
	defer C.dlclose(h)
	name := C.CString("ggml_table_gelu_f16")
	defer C.free(unsafe.Pointer(name))
	p := C.dlsym(h, name)
	if p == nil {
		return fmt.Errorf("%s has no symbol ggml_table_gelu_f16", lib)
	}
	table := unsafe.Slice((*uint16)(p), 1<<16)
	b := make([]byte, 0, 2<<16)
	for _, v := range table {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote ggml_table_gelu_f16 of %s to %s\n", filepath.Base(lib), out)
	return nil
}

// loadedCPUBackend is the path of the libggml-cpu variant ggml's backend
// loader chose for this CPU, read from the process's mappings.
func loadedCPUBackend() (string, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 6 && strings.HasPrefix(filepath.Base(fields[5]), "libggml-cpu") {
			return fields[5], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no libggml-cpu library is mapped: llama.cpp did not load its CPU backend")
}
