//! The planner's measured cost constants: one envelope in the `meta` table under
//! `"planner.costs"`, read once per open database and cached.

use super::error::{StorageError, contain};
use super::store::Store;
use super::tables::{META, META_NAME};
use crate::codec::meta::PlannerCostsRecord;

/// The `meta` key of the planner costs record.
pub(crate) const COSTS_KEY: &str = "planner.costs";

impl Store {
    /// The stored planner costs, if a calibration has been stored (cached after first read).
    pub(crate) fn planner_costs(&self) -> Result<Option<PlannerCostsRecord>, StorageError> {
        self.planner_costs_with(|c| c.cloned())
    }

    /// `f` of the stored planner costs, without copying them (what a query needs of them).
    pub(crate) fn planner_costs_with<T>(
        &self,
        f: impl FnOnce(Option<&PlannerCostsRecord>) -> T,
    ) -> Result<T, StorageError> {
        let mut cache = self.costs.lock();
        if let Some(c) = cache.as_ref() {
            return Ok(f(c.as_ref()));
        }
        let found = contain("read planner costs", || self.read_planner_costs())?;
        let out = f(found.as_ref());
        *cache = Some(found);
        Ok(out)
    }

    fn read_planner_costs(&self) -> Result<Option<PlannerCostsRecord>, StorageError> {
        let txn = self.begin_read()?;
        Ok(match txn.open_table(META) {
            Ok(t) => match t.get(COSTS_KEY).map_err(StorageError::backend("read planner costs"))? {
                Some(v) => Some(PlannerCostsRecord::decode(v.value()).map_err(|source| StorageError::CorruptMeta {
                    table: META_NAME,
                    key: COSTS_KEY.to_string(),
                    source: Box::new(source),
                })?),
                None => None,
            },
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(StorageError::backend("open meta table")(e)),
        })
    }

    /// Stores planner costs (durably, in their own transaction) and updates the cache.
    pub(crate) fn set_planner_costs(&self, rec: &PlannerCostsRecord) -> Result<(), StorageError> {
        let bytes = rec.encode().map_err(|source| StorageError::CorruptMeta {
            table: META_NAME,
            key: COSTS_KEY.to_string(),
            source: Box::new(source),
        })?;
        contain("write planner costs", || {
            let txn = self.begin_write("store planner costs")?;
            {
                let mut t = txn.open_table(META).map_err(StorageError::backend("open meta table"))?;
                t.insert(COSTS_KEY, bytes.as_slice()).map_err(StorageError::backend("write planner costs"))?;
            }
            txn.commit().map_err(StorageError::backend("commit planner costs"))
        })?;
        *self.costs.lock() = Some(Some(rec.clone()));
        Ok(())
    }
}
