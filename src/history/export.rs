//! `framelab history export`: every value in long format, one row per run × metric, as CSV
//! or Parquet (written with the parquet crate's own column writer: no Arrow needed).

use std::io::Write;
use std::sync::Arc;

use anyhow::Result;

use super::store::{Filter, Store, ValueRow};

/// The columns, in order (docs/history.md, "Export").
pub const COLUMNS: [&str; 9] = [
    "run_id",
    "commit",
    "branch",
    "machine",
    "recorded_at",
    "metric",
    "value",
    "unit",
    "tags",
];

/// One row of the long format: a stored value and its run's tags.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportRow {
    pub value: ValueRow,
    /// `key=value` pairs joined by `;`, sorted by key; empty without tags.
    pub tags: String,
}

/// Every value the filter lets through, oldest run first, then by metric.
pub fn rows(store: &mut Store, filter: &Filter) -> Result<Vec<ExportRow>> {
    let values = store.values(filter)?;
    let tags = store.tags()?;
    let mut rows: Vec<ExportRow> = values
        .into_iter()
        .map(|value| ExportRow {
            tags: (tags.get(&value.run_id))
                .map(|list| {
                    let pairs: Vec<String> = list.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    pairs.join(";")
                })
                .unwrap_or_default(),
            value,
        })
        .collect();
    rows.sort_by(|a, b| {
        let (a, b) = (&a.value, &b.value);
        (a.history_order(), &a.metric).cmp(&(b.history_order(), &b.metric))
    });
    Ok(rows)
}

/// Seconds since 1970 as RFC 3339 UTC (`2026-11-25T14:49:34Z`).
pub(super) fn rfc3339(unix_s: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix_s.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// CSV with a header row; time as RFC 3339 UTC, an empty branch when there was none.
pub fn csv(rows: &[ExportRow], out: &mut dyn Write) -> Result<()> {
    use crate::destination::csv_error;
    let mut writer = ::csv::Writer::from_writer(out);
    writer.write_record(COLUMNS).map_err(csv_error)?;
    for ExportRow { value: v, tags } in rows {
        writer
            .write_record([
                v.run_id.as_str(),
                &v.commit,
                v.branch.as_deref().unwrap_or(""),
                &v.machine,
                &rfc3339(v.recorded_at.unix_s),
                &v.metric,
                &v.value.to_string(),
                &v.unit,
                tags,
            ])
            .map_err(csv_error)?;
    }
    writer.flush()?;
    Ok(())
}

/// The Parquet schema: strings as UTF-8, the time as a UTC timestamp in microseconds.
const PARQUET_SCHEMA: &str = "message framelab_history {
    REQUIRED BYTE_ARRAY run_id (UTF8);
    REQUIRED BYTE_ARRAY commit (UTF8);
    OPTIONAL BYTE_ARRAY branch (UTF8);
    REQUIRED BYTE_ARRAY machine (UTF8);
    REQUIRED INT64 recorded_at (TIMESTAMP(MICROS,true));
    REQUIRED BYTE_ARRAY metric (UTF8);
    REQUIRED DOUBLE value;
    REQUIRED BYTE_ARRAY unit (UTF8);
    REQUIRED BYTE_ARRAY tags (UTF8);
}";

/// The rows as one Parquet file (one row group), in memory.
pub fn parquet(rows: &[ExportRow]) -> Result<Vec<u8>> {
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;

    let schema = Arc::new(parquet::schema::parser::parse_message_type(PARQUET_SCHEMA)?);
    let properties = Arc::new(WriterProperties::builder().build());
    let mut writer = SerializedFileWriter::new(Vec::new(), schema, properties)?;
    let mut group = writer.next_row_group()?;
    let strings = |pick: fn(&ExportRow) -> &str| -> Vec<ByteArray> {
        rows.iter().map(|r| ByteArray::from(pick(r))).collect()
    };
    let mut index = 0;
    while let Some(mut column) = group.next_column()? {
        match COLUMNS[index] {
            "branch" => {
                let present: Vec<ByteArray> = rows
                    .iter()
                    .filter_map(|r| r.value.branch.as_deref().map(ByteArray::from))
                    .collect();
                let levels: Vec<i16> = (rows.iter())
                    .map(|r| i16::from(r.value.branch.is_some()))
                    .collect();
                column
                    .typed::<ByteArrayType>()
                    .write_batch(&present, Some(&levels), None)?;
            }
            "recorded_at" => {
                let micros: Vec<i64> = rows
                    .iter()
                    .map(|r| r.value.recorded_at.unix_s.saturating_mul(1_000_000))
                    .collect();
                column
                    .typed::<Int64Type>()
                    .write_batch(&micros, None, None)?;
            }
            "value" => {
                let values: Vec<f64> = rows.iter().map(|r| r.value.value).collect();
                column
                    .typed::<DoubleType>()
                    .write_batch(&values, None, None)?;
            }
            name => {
                let values = match name {
                    "run_id" => strings(|r| &r.value.run_id),
                    "commit" => strings(|r| &r.value.commit),
                    "machine" => strings(|r| &r.value.machine),
                    "metric" => strings(|r| &r.value.metric),
                    "unit" => strings(|r| &r.value.unit),
                    _ => strings(|r| &r.tags),
                };
                column
                    .typed::<ByteArrayType>()
                    .write_batch(&values, None, None)?;
            }
        }
        column.close()?;
        index += 1;
    }
    group.close()?;
    Ok(writer.into_inner()?)
}

#[cfg(test)]
mod tests {
    use super::super::store::RecordedAt;
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;

    fn sample() -> Vec<ExportRow> {
        let row = |run_id: &str, commit: &str, branch: Option<&str>, at: i64| ValueRow {
            run_id: run_id.into(),
            commit: commit.into(),
            branch: branch.map(Into::into),
            machine: "m1".into(),
            recorded_at: RecordedAt {
                unix_s: at,
                ..RecordedAt::default()
            },
            metric: "fps".into(),
            value: 119.5,
            unit: "fps".into(),
            direction: "higher".into(),
        };
        vec![
            ExportRow {
                value: row("00aa", "c1", Some("main"), 1_700_000_000),
                tags: "ci=nightly".into(),
            },
            ExportRow {
                value: ValueRow {
                    machine: "m2".into(),
                    metric: "total.p99".into(),
                    value: 8123.25,
                    unit: "microseconds".into(),
                    ..row("00bb", "c2, \"quoted\"", None, 1_700_000_100)
                },
                tags: String::new(),
            },
        ]
    }

    #[test]
    fn csv_reads_back() {
        let mut bytes = Vec::new();
        csv(&sample(), &mut bytes).unwrap();
        let mut reader = ::csv::Reader::from_reader(bytes.as_slice());
        assert_eq!(
            reader.headers().unwrap().iter().collect::<Vec<_>>(),
            COLUMNS
        );
        let records: Vec<::csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(records.len(), 2);
        assert_eq!(&records[1][1], "c2, \"quoted\"");
        assert_eq!(&records[1][2], "");
        assert_eq!(&records[0][4], "2023-11-14T22:13:20Z");
        assert_eq!(records[1][6].parse::<f64>().unwrap(), 8123.25);
    }

    #[test]
    fn parquet_reads_back() {
        let bytes = parquet(&sample()).unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 2);
        let rows: Vec<parquet::record::Row> = reader
            .get_row_iter(None)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows[0].get_string(0).unwrap(), "00aa");
        assert_eq!(rows[0].get_string(2).unwrap(), "main");
        assert!(rows[1].get_string(2).is_err(), "no branch is null");
        assert_eq!(rows[1].get_string(1).unwrap(), "c2, \"quoted\"");
        assert_eq!(
            rows[0].get_timestamp_micros(4).unwrap(),
            1_700_000_000_000_000
        );
        assert_eq!(rows[1].get_double(6).unwrap(), 8123.25);
        assert_eq!(rows[0].get_string(8).unwrap(), "ci=nightly");
    }
}
