//! Applying gray versions: betas by client IP (and the pre-protocol-4 beta
//! commands), gray rules by tag or label, and their stop and promotion.
//! A config's grays are kept in matching order: priority, then name.

use std::sync::Arc;

use super::config::NewRow;
use super::{
    data_key_of, data_key_text, pb, ApplyError, ConfigKey, Gray, GrayRule, OpType, Response, State,
    BETA_GRAY, BETA_PRIORITY, GRAY_RULE_VERSION,
};

impl State {
    /// Inserts or replaces a gray version, keeping the matching order.
    pub(super) fn put_gray(&mut self, key: &ConfigKey, gray: Gray) {
        let grays = self.grays.entry(key.clone()).or_default();
        grays.retain(|g| g.name != gray.name);
        let at = grays
            .iter()
            .position(|g| {
                (std::cmp::Reverse(g.priority), &g.name)
                    > (std::cmp::Reverse(gray.priority), &gray.name)
            })
            .unwrap_or(grays.len());
        grays.insert(at, Arc::new(gray));
    }

    /// Removes a gray version; returns it.
    pub(super) fn take_gray(&mut self, key: &ConfigKey, name: &str) -> Option<Arc<Gray>> {
        let grays = self.grays.get_mut(key)?;
        let at = grays.iter().position(|g| g.name == name)?;
        let gray = grays.remove(at);
        if grays.is_empty() {
            self.grays.remove(key);
        }
        Some(gray)
    }

    /// A beta publish from a log written before cluster protocol 4: the
    /// gray named "beta", applied exactly as then (no history row, no
    /// limit: only a beta could exist).
    pub(super) fn publish_beta(
        &mut self,
        b: &pb::PublishBeta,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = self.key_in_existing_namespace(b.key.as_ref())?;
        let origin = b.origin.clone().unwrap_or_default();
        // What a beta held then (and an old snapshot keeps): no type, app
        // or create time of its own.
        let gray = Gray {
            name: BETA_GRAY.to_string(),
            rule: GrayRule::Beta {
                ips: b.beta_ips.clone(),
            },
            priority: BETA_PRIORITY,
            content: b.content.as_str().into(),
            md5: b.md5.as_str().into(),
            config_type: String::new(),
            app_name: String::new(),
            src_user: origin.src_user.as_str().into(),
            src_ip: origin.src_ip.as_str().into(),
            create_time: origin.time_ms,
            modify_time: origin.time_ms,
            encrypted_data_key: None,
        };
        self.put_gray(&key, gray);
        changed.push(key);
        Ok(Response::Done)
    }

    /// A beta stop from an old log (no history row, as then).
    pub(super) fn stop_beta(
        &mut self,
        s: &pb::StopBeta,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = ConfigKey::from(s.key.as_ref().ok_or(ApplyError::UnknownCommand)?);
        let existed = self.take_gray(&key, BETA_GRAY).is_some();
        if existed {
            changed.push(key);
        }
        Ok(Response::Removed { existed })
    }

    /// A beta promotion from an old log: the formal publish's history row
    /// only, as then.
    pub(super) fn promote_beta(
        &mut self,
        p: &pb::PromoteBeta,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = self.key_in_existing_namespace(p.key.as_ref())?;
        let beta = self
            .gray(&key, BETA_GRAY)
            .cloned()
            .ok_or_else(|| ApplyError::GrayNotFound(BETA_GRAY.to_string()))?;
        if *beta.md5 != *p.beta_md5 {
            return Err(ApplyError::GrayReplaced(BETA_GRAY.to_string()));
        }
        let mut publish = self.republish(&key, &beta.content, &beta.md5, "");
        publish.encrypted_data_key = data_key_text(&beta.encrypted_data_key).to_string();
        publish.origin = p.origin.clone();
        publish.cas_md5 = p.cas_md5.clone();
        publish.history_limit = p.history_limit;
        // A refused publish changes nothing, so the beta stays with it.
        self.publish(&publish, changed)?;
        self.take_gray(&key, BETA_GRAY);
        Ok(Response::Done)
    }

    /// Publishes or replaces a gray version (Nacos'
    /// `ConfigOperationService.publishConfigGray`): a new name past the
    /// limit is refused; a history row "I" (new content) or "U" (the
    /// replaced content) names the gray.
    pub(super) fn publish_gray(
        &mut self,
        p: &pb::PublishGray,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = self.key_in_existing_namespace(p.key.as_ref())?;
        let rule = p.rule.as_ref().ok_or(ApplyError::UnknownCommand)?;
        if rule.version != GRAY_RULE_VERSION {
            return Err(ApplyError::GrayRuleVersionInvalid);
        }
        let parsed =
            GrayRule::parse(&rule.r#type, &rule.expr).ok_or(ApplyError::GrayRuleVersionInvalid)?;
        let old = self.gray(&key, &p.name).cloned();
        if old.is_none() && self.grays(&key).len() >= p.max_grays as usize {
            return Err(ApplyError::GrayOverMaxCount(p.max_grays));
        }
        if let (Some(cas), Some(old)) = (&p.cas_md5, &old) {
            if **cas != *old.md5 {
                return Err(ApplyError::GrayCasMismatch);
            }
        }
        let origin = p.origin.clone().unwrap_or_default();
        let gray = Gray {
            name: p.name.clone(),
            rule: parsed,
            priority: rule.priority,
            content: p.content.as_str().into(),
            md5: p.md5.as_str().into(),
            config_type: p.config_type.clone(),
            app_name: p.app_name.clone(),
            src_user: origin.src_user.as_str().into(),
            src_ip: origin.src_ip.as_str().into(),
            create_time: old.as_ref().map_or(origin.time_ms, |g| g.create_time),
            modify_time: origin.time_ms,
            encrypted_data_key: data_key_of(&p.encrypted_data_key),
        };
        let row = match &old {
            Some(old) => NewRow {
                op: OpType::Update,
                content: old.content.clone(),
                md5: old.md5.clone(),
                app_name: old.app_name.clone(),
                gray_name: p.name.clone(),
                src_user: gray.src_user.clone(),
                src_ip: gray.src_ip.clone(),
                encrypted_data_key: old.encrypted_data_key.clone(),
            },
            None => NewRow {
                op: OpType::Insert,
                content: gray.content.clone(),
                md5: gray.md5.clone(),
                app_name: gray.app_name.clone(),
                gray_name: p.name.clone(),
                src_user: gray.src_user.clone(),
                src_ip: gray.src_ip.clone(),
                encrypted_data_key: gray.encrypted_data_key.clone(),
            },
        };
        self.put_gray(&key, gray);
        self.record_history(&key, row, origin.time_ms, p.history_limit);
        changed.push(key);
        Ok(Response::Done)
    }

    /// Removes a gray version, with a history row "D" holding its content.
    pub(super) fn stop_gray(
        &mut self,
        s: &pb::StopGray,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = ConfigKey::from(s.key.as_ref().ok_or(ApplyError::UnknownCommand)?);
        let Some(old) = self.take_gray(&key, &s.name) else {
            return Ok(Response::Removed { existed: false });
        };
        let origin = s.origin.clone().unwrap_or_default();
        let row = NewRow {
            op: OpType::Delete,
            content: old.content.clone(),
            md5: old.md5.clone(),
            app_name: old.app_name.clone(),
            gray_name: s.name.clone(),
            src_user: origin.src_user.as_str().into(),
            src_ip: origin.src_ip.as_str().into(),
            encrypted_data_key: old.encrypted_data_key.clone(),
        };
        self.record_history(&key, row, origin.time_ms, s.history_limit);
        changed.push(key);
        Ok(Response::Removed { existed: true })
    }

    /// The gray's content becomes the config and the gray ends, in one
    /// apply: the history rows of a formal publish and a gray removal, as
    /// Nacos writes them when its console publishes the gray's content and
    /// then deletes the gray.
    pub(super) fn promote_gray(
        &mut self,
        p: &pb::PromoteGray,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = self.key_in_existing_namespace(p.key.as_ref())?;
        let gray = self
            .gray(&key, &p.name)
            .cloned()
            .ok_or_else(|| ApplyError::GrayNotFound(p.name.clone()))?;
        if *gray.md5 != *p.gray_md5 {
            return Err(ApplyError::GrayReplaced(p.name.clone()));
        }
        let mut publish = self.republish(&key, &gray.content, &gray.md5, &gray.app_name);
        publish.encrypted_data_key = data_key_text(&gray.encrypted_data_key).to_string();
        publish.origin = p.origin.clone();
        publish.cas_md5 = p.cas_md5.clone();
        publish.history_limit = p.history_limit;
        // A refused publish changes nothing, so the gray stays with it.
        self.publish(&publish, changed)?;
        let stop = pb::StopGray {
            key: p.key.clone(),
            name: p.name.clone(),
            origin: p.origin.clone(),
            history_limit: p.history_limit,
        };
        self.stop_gray(&stop, changed)?;
        Ok(Response::Done)
    }
}
