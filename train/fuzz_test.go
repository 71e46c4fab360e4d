package train

import (
	"errors"
	"testing"
)

// FuzzLoadCheckpoint feeds arbitrary bytes to the checkpoint decoder. It must
// never panic, and it must refuse every input that is not an intact
// checkpoint with one of the documented errors. With fixSum set the input's
// last 32 bytes are replaced by a valid SHA-256 of the rest, so that the
// fuzzer also reaches the header, metadata and tensor checks behind the
// checksum. The seed corpus is a real checkpoint of a tiny model, whole,
// truncated and with its checksum repaired after an edit.
//
// Run it longer with: go test -run '^$' -fuzz '^FuzzLoadCheckpoint$' -fuzztime 60s ./train/
func FuzzLoadCheckpoint(f *testing.F) {
	_, good := savedCheckpoint(f)
	f.Add(good, false)
	f.Add(good[:len(good)/2], false)
	f.Add(good[:headerLen], true)
	edited := append([]byte(nil), good...)
	edited[headerLen+3] ^= 0x20 // inside the JSON metadata
	f.Add(edited, true)
	f.Add([]byte(checkpointMagic), false)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		if fixSum && len(b) >= sumLen {
			b = resum(b)
		}
		ck, err := decode(b)
		if err != nil {
			for _, want := range []error{ErrNotCheckpoint, ErrVersion, ErrTruncated, ErrChecksum, ErrCorrupt} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("decode error %q wraps none of the documented errors", err)
		}
		if ck.Model == nil {
			t.Fatal("decode accepted a checkpoint without a model")
		}
	})
}
