//! Typed columns handed to Python as `(dtype, bytes)`: NumPy views them with `frombuffer`, so
//! a million packets cross into Python as one buffer, not a million objects.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// One column: a NumPy type string and the values' native-endian bytes.
pub enum Column {
    /// Unsigned 64-bit integers (`<u8` on little-endian machines).
    U64(Vec<u64>),
    /// 64-bit floats; a missing value is NaN.
    F64(Vec<f64>),
}

impl Column {
    /// NumPy's type string for this column on this machine.
    fn dtype(&self) -> &'static str {
        let little = cfg!(target_endian = "little");
        match (self, little) {
            (Column::U64(_), true) => "<u8",
            (Column::U64(_), false) => ">u8",
            (Column::F64(_), true) => "<f8",
            (Column::F64(_), false) => ">f8",
        }
    }

    /// The values' bytes, in the machine's order.
    fn bytes(&self) -> Vec<u8> {
        match self {
            Column::U64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            Column::F64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        }
    }
}

/// An `Option` as a float column value: `None` is NaN.
pub fn or_nan(value: Option<f64>) -> f64 {
    value.unwrap_or(f64::NAN)
}

/// A table: named columns of equal length, in order.
pub struct Table(pub Vec<(&'static str, Column)>);

impl Table {
    /// A dict `{name: (dtype, bytes)}` in column order.
    pub fn into_py<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, column) in self.0 {
            let bytes = PyBytes::new(py, &column.bytes());
            dict.set_item(name, (column.dtype(), bytes))?;
        }
        Ok(dict)
    }
}
