package schedule

import (
	"errors"
	"testing"
)

func TestAssemblerWritesInRowOrder(t *testing.T) {
	const n = 40
	var got []int
	reads := 0
	a := StartAssembler(n, 2, func(i int) (int, error) { reads++; return i, nil }, func(v *int) error { got = append(got, *v); return nil })
	for i := n - 1; i >= 0; i-- {
		v := i
		a.Add(i, &v)
	}
	complete, err := a.Close()
	if err != nil || !complete {
		t.Fatalf("Close = %v, %v", complete, err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("row %d written at %d", v, i)
		}
	}
	if reads != n-1-2 { // the last one added is written at once; two more were kept
		t.Errorf("%d rows read back, want %d", reads, n-3)
	}
	a.Stop() // after Close: nothing happens
}

func TestAssemblerReportsMissingRowsAndErrors(t *testing.T) {
	a := StartAssembler(3, 1, func(int) (int, error) { return 0, nil }, func(*int) error { return nil })
	a.Add(0, nil)
	a.Add(2, nil)
	if complete, err := a.Close(); complete || err != nil {
		t.Errorf("a missing row: complete %v, err %v", complete, err)
	}
	boom := errors.New("boom")
	b := StartAssembler(2, 1, func(int) (int, error) { return 0, boom }, func(*int) error { return nil })
	b.Add(0, nil)
	if complete, err := b.Close(); complete || !errors.Is(err, boom) {
		t.Errorf("a failed read: complete %v, err %v", complete, err)
	}
}
