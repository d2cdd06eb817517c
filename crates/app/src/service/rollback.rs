//! Roll a config back to a history row's content.

use tacos_core::validate::InvalidInput;
use tacos_core::Op;
use tacos_state::HistoryRow;

use super::{origin, Caller, ConfigService, ServiceError};

impl ConfigService {
    /// Publishes a history row's content again over its config, keeping the
    /// config's metadata. `cas_md5` is the config version the user saw.
    pub async fn rollback(
        &self,
        row: &HistoryRow,
        cas_md5: Option<String>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        caller.may_write_key(&row.key)?;
        let state = self.state();
        if state.config(&row.key).is_some_and(|c| c.md5 == row.md5) {
            return Err(InvalidInput::Other(
                "id",
                format!("row {} holds the current content already", row.id),
            )
            .into());
        }
        let mut publish = state.republish(&row.key, &row.content, &row.md5, &row.app_name);
        // The version's content comes back with the key it was encrypted with.
        publish.encrypted_data_key =
            tacos_state::data_key_text(&row.encrypted_data_key).to_string();
        drop(state);
        publish.origin = Some(origin(caller));
        publish.cas_md5 = cas_md5.filter(|m| !m.is_empty());
        publish.history_limit = self.limits.history_limit;
        self.writer
            .propose(Op::PublishConfig(publish), caller)
            .await
            .map(|_| ())
    }
}
