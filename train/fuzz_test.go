package train

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzSeeds returns small checkpoints of a tiny model for the fuzz targets'
// seed corpora: saved before training, interrupted after one batch (with
// Adam's moments and a partial epoch) and after one epoch (with metrics
// and a trace). Small seeds keep each execution and each minimisation of
// an interesting input short.
func fuzzSeeds(t testing.TB) [][]byte {
	t.Helper()
	tr, te := blobs("b/train", 32, 0.3, 1), blobs("b/test", 10, 0.3, 2)
	cfg := Config{Seed: 3, Epochs: 1, BatchSize: 16, EvalBatchSize: 10, LR: 0.05,
		Model: ModelConfig{Hidden: 2, Encoder: 2}, Forward: SolverConfig{Tol: 0.1}}
	path := tempPath(t, "seed.ckpt")
	read := func() []byte {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return b
	}
	trn, err := New(cfg, tr, te, &Options{Checkpoint: path})
	require.NoError(t, err)
	require.NoError(t, trn.Save(path))
	fresh := read()
	ctx, cancel := context.WithCancel(context.Background())
	trn.opts.OnBatch = func(*BatchMetrics) { cancel() }
	_, err = trn.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	mid := read()
	trn.opts.OnBatch = nil
	_, err = trn.Run(context.Background())
	require.NoError(t, err)
	return [][]byte{fresh, mid, read()}
}

// fuzzInput returns the checkpoint a fuzz input describes: with base
// below len(seeds), seeds[base] with the edits applied (see applyEdits);
// otherwise the edits' bytes themselves. With fixSum set its last 32 bytes
// are then replaced by a valid SHA-256 of the rest, so that the fuzzer
// reaches the header, metadata and tensor checks behind the checksum.
//
// Describing an input as a few edits of a real checkpoint keeps fuzz
// inputs a few bytes long however long the checkpoint: the fuzzer's
// minimisation of an interesting input is quadratic in its length, and a
// raw checkpoint of a few kilobytes held a worker for its full minute.
func fuzzInput(seeds [][]byte, base uint8, edits []byte, fixSum bool) []byte {
	b := edits
	if int(base) < len(seeds) {
		b = applyEdits(seeds[base], edits)
	}
	if fixSum && len(b) >= sumLen {
		b = resum(b)
	}
	return b
}

// applyEdits returns a copy of b edited by ops, four bytes each (a last
// partial op is ignored): kind, a big-endian position p (modulo the
// current length plus one) and a value v. Kind modulo 5: 0 sets byte p to
// v, 1 XORs it with v, 2 inserts v before it, 3 removes v%16 + 1 bytes
// from p on and 4 truncates the file at p.
func applyEdits(b, ops []byte) []byte {
	b = append([]byte(nil), b...)
	for ; len(ops) >= 4; ops = ops[4:] {
		p, v := int(binary.BigEndian.Uint16(ops[1:]))%(len(b)+1), ops[3]
		switch ops[0] % 5 {
		case 0:
			if p < len(b) {
				b[p] = v
			}
		case 1:
			if p < len(b) {
				b[p] ^= v
			}
		case 2:
			b = slices.Insert(b, p, v)
		case 3:
			b = slices.Delete(b, p, min(len(b), p+int(v%16)+1))
		case 4:
			b = b[:p]
		}
	}
	return b
}

// editAt returns the op that applies kind at position p with value v.
func editAt(kind byte, p int, v byte) []byte {
	return []byte{kind, byte(p >> 8), byte(p), v}
}

// addCheckpointSeeds adds the seed corpus of the checkpoint fuzz targets
// for seeds: each seed whole, with a byte of its metadata changed (checksum
// repaired), with a tensor value made NaN (repaired), truncated and with a
// length field changed; and raw inputs: empty, the magic and a header.
func addCheckpointSeeds(f *testing.F, seeds [][]byte) {
	for i, s := range seeds {
		base := uint8(i)
		ml := int(binary.LittleEndian.Uint64(s[16:]))
		f.Add(base, []byte{}, false)
		f.Add(base, editAt(1, headerLen+3, 0x20), true)
		f.Add(base, slices.Concat(editAt(0, headerLen+ml+6, 0xf8), editAt(0, headerLen+ml+7, 0x7f)), true)
		f.Add(base, editAt(4, len(s)/2, 0), false)
		f.Add(base, editAt(1, 25, 1), true)
	}
	raw := uint8(len(seeds))
	f.Add(raw, []byte{}, false)
	f.Add(raw, []byte(checkpointMagic), false)
	f.Add(raw, seeds[0][:headerLen], true)
}

// FuzzLoadCheckpoint feeds checkpoints to the decoder (parse, then the
// model's rebuild): edits of small real checkpoints of a tiny model
// (fuzzSeeds) and arbitrary bytes (see fuzzInput). It must never panic,
// and it must refuse every input that is not an intact checkpoint with
// one of the documented errors.
//
// Run it longer with: go test -run '^$' -fuzz '^FuzzLoadCheckpoint$' -fuzztime 60s ./train/
func FuzzLoadCheckpoint(f *testing.F) {
	seeds := fuzzSeeds(f)
	addCheckpointSeeds(f, seeds)
	f.Fuzz(func(t *testing.T, base uint8, edits []byte, fixSum bool) {
		ck, err := decode(fuzzInput(seeds, base, edits, fixSum))
		if err != nil {
			requireDocumented(t, err)
			return
		}
		if ck.Model == nil || ck.Epoch > ck.Config.Epochs || len(ck.History) != ck.Epoch {
			t.Fatalf("decode accepted an inconsistent checkpoint: model %v, epoch %d of %d, %d epochs of metrics", ck.Model != nil, ck.Epoch, ck.Config.Epochs, len(ck.History))
		}
	})
}

// FuzzParseCheckpoint fuzzes the checkpoint parser alone (framing,
// checksum, metadata and tensor table; no model) on the inputs of
// FuzzLoadCheckpoint: it must never panic, must refuse with one of the
// documented errors, and what it accepts must have a tensor table that
// covers the data section exactly.
//
// Run it longer with: go test -run '^$' -fuzz '^FuzzParseCheckpoint$' -fuzztime 60s ./train/
func FuzzParseCheckpoint(f *testing.F) {
	seeds := fuzzSeeds(f)
	addCheckpointSeeds(f, seeds)
	f.Fuzz(func(t *testing.T, base uint8, edits []byte, fixSum bool) {
		b := fuzzInput(seeds, base, edits, fixSum)
		m, tensors, err := parse(b)
		if err != nil {
			requireDocumented(t, err)
			return
		}
		n := 0
		for _, ti := range m.Tensors {
			x, ok := tensors[ti.Name]
			if !ok || len(x) != ti.Rows*ti.Cols {
				t.Fatalf("tensor %s (%d×%d) parsed as %d values", ti.Name, ti.Rows, ti.Cols, len(x))
			}
			n += len(x)
		}
		if dl := binary.LittleEndian.Uint64(b[24:]); len(tensors) != len(m.Tensors) || dl != uint64(8*n) {
			t.Fatalf("%d tensors of %d values from a table of %d and %d data bytes", len(tensors), n, len(m.Tensors), dl)
		}
	})
}

// requireDocumented fails t unless err wraps one of the documented errors
// of Load.
func requireDocumented(t *testing.T, err error) {
	t.Helper()
	for _, want := range []error{ErrNotCheckpoint, ErrVersion, ErrTruncated, ErrChecksum, ErrCorrupt} {
		if errors.Is(err, want) {
			return
		}
	}
	t.Fatalf("error %q wraps none of the documented errors", err)
}
