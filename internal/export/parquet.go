package export

import (
	"fmt"
	"io"
	"reflect"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

// rowGroupBytes bounds the bytes buffered before a row group is written,
// so memory stays flat however many messages are exported.
const rowGroupBytes = 64 << 20

// parquetWriter writes a flat Parquet file: nullable columns are OPTIONAL,
// strings are BYTE_ARRAY (STRING), integers INT64, floats DOUBLE, bools
// BOOLEAN; Snappy-compressed, which pyarrow and R's arrow read by default.
type parquetWriter struct {
	w       *parquet.GenericWriter[any] // rows only: the schema is built at run time
	cols    []Column
	row     parquet.Row
	pending int
}

func newParquetWriter(w io.Writer, cols []Column) (*parquetWriter, error) {
	schema, err := parquetSchema(cols)
	if err != nil {
		return nil, err
	}
	pw := parquet.NewGenericWriter[any](w, schema,
		parquet.Compression(&snappy.Codec{}),
		// Version 1 pages and PLAIN strings: what every reader handles
		// (parquet-go's default DELTA_LENGTH_BYTE_ARRAY needs pyarrow ≥ 9
		// and is missing from several other readers).
		parquet.DataPageVersion(1),
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
	)
	return &parquetWriter{w: pw, cols: cols, row: make(parquet.Row, len(cols))}, nil
}

// parquetSchema builds the schema from a struct type made at run time:
// parquet-go keeps a struct's field order, while its map-based Group
// would sort the columns by name.
func parquetSchema(cols []Column) (schema *parquet.Schema, err error) {
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		var t reflect.Type
		switch c.Kind {
		case String:
			t = reflect.TypeFor[string]()
		case Int:
			t = reflect.TypeFor[int64]()
		case Float:
			t = reflect.TypeFor[float64]()
		case Bool:
			t = reflect.TypeFor[bool]()
		}
		tag := c.Name
		if c.Nullable {
			t, tag = reflect.PointerTo(t), tag+",optional"
		}
		fields[i] = reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: t, Tag: reflect.StructTag(`parquet:"` + tag + `"`)}
	}
	defer func() {
		if r := recover(); r != nil { // SchemaOf panics on what it cannot map
			err = fmt.Errorf("parquet schema: %v", r)
		}
	}()
	return parquet.SchemaOf(reflect.New(reflect.StructOf(fields)).Elem().Interface()), nil
}

func (p *parquetWriter) Write(r Row) error {
	for i, v := range r {
		c := p.cols[i]
		def := 0
		if c.Nullable {
			def = 1
		}
		var pv parquet.Value
		if v != nil && kindOf(v) != c.Kind {
			return fmt.Errorf("export: column %s: %T value in a %s column", c.Name, v, c.Kind)
		}
		switch x := v.(type) {
		case nil:
			if !c.Nullable {
				return fmt.Errorf("export: column %s: null in a required column", c.Name)
			}
			def = 0
		case string:
			pv = parquet.ByteArrayValue([]byte(x))
			p.pending += len(x)
		case int64:
			pv = parquet.Int64Value(x)
		case float64:
			pv = parquet.DoubleValue(x)
		case bool:
			pv = parquet.BooleanValue(x)
		default:
			return fmt.Errorf("export: column %s: unexpected value type %T", c.Name, v)
		}
		p.row[i] = pv.Level(0, def, i)
		p.pending += 8
	}
	if _, err := p.w.WriteRows([]parquet.Row{p.row}); err != nil {
		return err
	}
	if p.pending >= rowGroupBytes {
		p.pending = 0
		return p.w.Flush()
	}
	return nil
}

func (p *parquetWriter) Close() error { return p.w.Close() }

func kindOf(v any) Kind {
	switch v.(type) {
	case int64:
		return Int
	case float64:
		return Float
	case bool:
		return Bool
	}
	return String
}
