//! The problem list verification fills for one collection: capped at [`MAX_PROBLEMS`], the
//! rest only counted.

use crate::storage::integrity::{Problem, VerifyReport};

/// Problems reported per collection at most (the rest are counted in one last problem).
pub(crate) const MAX_PROBLEMS: usize = 50;

pub(crate) struct Out<'a> {
    pub(crate) report: &'a mut VerifyReport,
    pub(crate) name: String,
    pub(crate) count: usize,
}

impl Out<'_> {
    pub(crate) fn problem(&mut self, row: Option<u64>, detail: String) {
        self.count += 1;
        if self.count <= MAX_PROBLEMS {
            self.report.problems.push(Problem { collection: Some(self.name.clone()), page: None, row, detail });
        }
    }
}
