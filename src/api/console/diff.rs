//! Line diffs for the console: what a publish will change, and what
//! changed between two history versions.
//!
//! Computed on the server so the browser and the tests see one
//! implementation. Myers' O((N+M)·D) algorithm runs on the lines left after
//! cutting the common head and tail (most edits touch a few lines of a
//! config). Its work is bounded: past [`MAX_WORK`] steps the diff falls back
//! to "every remaining line removed, then every new line added", still a
//! correct diff, marked `approximate`.

use serde::Serialize;

/// Bound on the snake steps of one diff (about 50 ms).
const MAX_WORK: usize = 20_000_000;
/// Bound on the edit distance explored (the trace grows with its square).
const MAX_EDITS: usize = 1_000;

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffLine {
    /// `" "` same, `"-"` only on the left, `"+"` only on the right.
    pub op: &'static str,
    /// 1-based line number on the left (absent for an added line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left: Option<usize>,
    /// 1-based line number on the right (absent for a removed line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub right: Option<usize>,
    pub text: String,
}

/// A run of changes with its context lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    pub left_start: usize,
    pub right_start: usize,
    pub lines: Vec<DiffLine>,
}

/// A whole diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    /// The two texts are byte-for-byte equal.
    pub identical: bool,
    pub added: usize,
    pub removed: usize,
    /// Only a newline at the very end differs (no line shows it).
    pub newline_at_end_changed: bool,
    /// The work bound was hit: correct, but not the smallest diff.
    pub approximate: bool,
    pub hunks: Vec<Hunk>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Same(usize, usize),
    Remove(usize),
    Add(usize),
}

/// The lines of a text; a final newline ends the last line rather than
/// starting an empty one.
fn lines(text: &str) -> Vec<&str> {
    text.split_terminator('\n').collect()
}

/// Diffs `left` against `right`, keeping `context` unchanged lines around
/// each change (`usize::MAX`: the whole text).
pub fn diff(left: &str, right: &str, context: usize) -> Diff {
    let a = lines(left);
    let b = lines(right);
    let (edits, approximate) = edits(&a, &b);
    let added = edits.iter().filter(|e| matches!(e, Edit::Add(_))).count();
    let removed = edits
        .iter()
        .filter(|e| matches!(e, Edit::Remove(_)))
        .count();
    Diff {
        identical: left == right,
        added,
        removed,
        newline_at_end_changed: left.ends_with('\n') != right.ends_with('\n')
            && !left.is_empty()
            && !right.is_empty(),
        approximate,
        hunks: hunks(&edits, &a, &b, context),
    }
}

/// The edit script turning `a` into `b`, and whether it is approximate.
fn edits(a: &[&str], b: &[&str]) -> (Vec<Edit>, bool) {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut out: Vec<Edit> = (0..head).map(|i| Edit::Same(i, i)).collect();
    let (middle, approximate) = match myers(mid_a, mid_b) {
        Some(middle) => (middle, false),
        None => {
            let mut all: Vec<Edit> = (0..mid_a.len()).map(Edit::Remove).collect();
            all.extend((0..mid_b.len()).map(Edit::Add));
            (all, true)
        }
    };
    out.extend(middle.into_iter().map(|e| match e {
        Edit::Same(i, j) => Edit::Same(i + head, j + head),
        Edit::Remove(i) => Edit::Remove(i + head),
        Edit::Add(j) => Edit::Add(j + head),
    }));
    let (end_a, end_b) = (a.len() - tail, b.len() - tail);
    out.extend((0..tail).map(|i| Edit::Same(end_a + i, end_b + i)));
    (out, approximate)
}

/// Myers' greedy shortest edit script, or `None` past the work bound.
fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Edit>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let total = a.len() + b.len();
    let limit = MAX_EDITS.min(total).min(MAX_WORK / (total + 1)).max(1) as isize;
    let offset = limit + 1;
    let at = |k: isize| (k + offset) as usize;
    let mut v = vec![0isize; (2 * limit + 3) as usize];
    // trace[d] holds v[-d..=d] as it was when round d started.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=limit {
        trace.push(v[at(-d)..=at(d)].to_vec());
        let mut k = -d;
        while k <= d {
            let mut x = if k == -d || (k != d && v[at(k - 1)] < v[at(k + 1)]) {
                v[at(k + 1)]
            } else {
                v[at(k - 1)] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[at(k)] = x;
            if x >= n && y >= m {
                return Some(backtrack(&trace, n, m));
            }
            k += 2;
        }
    }
    None
}

fn backtrack(trace: &[Vec<isize>], n: isize, m: isize) -> Vec<Edit> {
    let (mut x, mut y) = (n, m);
    let mut out = Vec::new();
    for d in (1..trace.len() as isize).rev() {
        let v = &trace[d as usize];
        let get = |k: isize| v[(k + d) as usize];
        let k = x - y;
        let prev_k = if k == -d || (k != d && get(k - 1) < get(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = get(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            out.push(Edit::Same(x as usize, y as usize));
        }
        if prev_k == k + 1 {
            out.push(Edit::Add(prev_y as usize));
        } else {
            out.push(Edit::Remove(prev_x as usize));
        }
        x = prev_x;
        y = prev_y;
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        out.push(Edit::Same(x as usize, y as usize));
    }
    out.reverse();
    out
}

/// Groups edits into hunks with `context` lines around each change.
fn hunks(edits: &[Edit], a: &[&str], b: &[&str], context: usize) -> Vec<Hunk> {
    let changed: Vec<usize> = edits
        .iter()
        .enumerate()
        .filter(|(_, e)| !matches!(e, Edit::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let mut out: Vec<Hunk> = Vec::new();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(context);
        let mut end = changed[i].saturating_add(context).min(edits.len() - 1);
        // Merge changes whose context windows touch.
        while i + 1 < changed.len() && changed[i + 1].saturating_sub(context) <= end + 1 {
            i += 1;
            end = changed[i].saturating_add(context).min(edits.len() - 1);
        }
        i += 1;
        let lines: Vec<DiffLine> = edits[start..=end]
            .iter()
            .map(|e| match *e {
                Edit::Same(l, r) => DiffLine {
                    op: " ",
                    left: Some(l + 1),
                    right: Some(r + 1),
                    text: a[l].to_string(),
                },
                Edit::Remove(l) => DiffLine {
                    op: "-",
                    left: Some(l + 1),
                    right: None,
                    text: a[l].to_string(),
                },
                Edit::Add(r) => DiffLine {
                    op: "+",
                    left: None,
                    right: Some(r + 1),
                    text: b[r].to_string(),
                },
            })
            .collect();
        let (left_start, right_start) = first_numbers(&edits[..=start]);
        out.push(Hunk {
            left_start,
            right_start,
            lines,
        });
    }
    out
}

/// The 1-based left and right line numbers at the last edit of `upto`.
fn first_numbers(upto: &[Edit]) -> (usize, usize) {
    let before = &upto[..upto.len() - 1];
    let left = before.iter().filter(|e| !matches!(e, Edit::Add(_))).count();
    let right = before
        .iter()
        .filter(|e| !matches!(e, Edit::Remove(_)))
        .count();
    (left + 1, right + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a diff's lines (whole-text context) to rebuild both sides.
    fn sides(d: &Diff) -> (Vec<String>, Vec<String>) {
        let mut left = Vec::new();
        let mut right = Vec::new();
        for line in d.hunks.iter().flat_map(|h| &h.lines) {
            if line.op != "+" {
                left.push(line.text.clone());
            }
            if line.op != "-" {
                right.push(line.text.clone());
            }
        }
        (left, right)
    }

    #[test]
    fn a_one_line_change_shows_with_context() {
        let left = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let right = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let d = diff(left, right, 1);
        assert!(!d.identical);
        assert_eq!((d.added, d.removed), (1, 1));
        assert_eq!(d.hunks.len(), 1);
        let ops: Vec<(&str, &str)> = d.hunks[0]
            .lines
            .iter()
            .map(|l| (l.op, l.text.as_str()))
            .collect();
        assert_eq!(ops, vec![(" ", "d"), ("-", "e"), ("+", "E"), (" ", "f")]);
        assert_eq!((d.hunks[0].left_start, d.hunks[0].right_start), (4, 4));
        assert_eq!(d.hunks[0].lines[2].right, Some(5));
        assert_eq!(d.hunks[0].lines[1].left, Some(5));
    }

    #[test]
    fn identical_and_newline_only_changes() {
        let d = diff("x\n", "x\n", 3);
        assert!(d.identical && d.hunks.is_empty());
        let d = diff("x", "x\n", 3);
        assert!(!d.identical && d.newline_at_end_changed && d.hunks.is_empty());
        let d = diff("", "new\n", 3);
        assert_eq!((d.added, d.removed), (1, 0));
    }

    #[test]
    fn far_apart_changes_make_separate_hunks_and_close_ones_merge() {
        let left: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let right = left
            .replace("line 3\n", "line three\n")
            .replace("line 25\n", "")
            .replace("line 6\n", "line six\n");
        let d = diff(&left, &right, 2);
        assert_eq!(d.hunks.len(), 2, "{d:#?}");
        assert_eq!((d.added, d.removed), (2, 3));
        let full = diff(&left, &right, usize::MAX);
        assert_eq!(full.hunks.len(), 1);
        let (l, r) = sides(&full);
        assert_eq!(l.join("\n") + "\n", left);
        assert_eq!(r.join("\n") + "\n", right);
    }

    #[test]
    fn the_script_is_minimal_on_interleaved_edits() {
        let left = "a\nb\nc\na\nb\nb\na\n";
        let right = "c\nb\na\nb\na\nc\n";
        let d = diff(left, right, usize::MAX);
        // The classic example: edit distance 5.
        assert_eq!(d.added + d.removed, 5);
        let (l, r) = sides(&d);
        assert_eq!(l.join("\n") + "\n", left);
        assert_eq!(r.join("\n") + "\n", right);
        assert!(!d.approximate);
    }

    #[test]
    fn huge_rewrites_fall_back_to_replace_all() {
        let left: String = (0..6000).map(|i| format!("{i}\n")).collect();
        let right: String = (0..6000).map(|i| format!("x{i}\n")).collect();
        let d = diff(&left, &right, 0);
        assert!(d.approximate);
        assert_eq!((d.added, d.removed), (6000, 6000));
    }
}
