// The login page: POST /nacos/v1/auth/login, then the shell. The
// language switch is here too, before anyone logs in.

import { login } from '../api.js';
import { h, clear, show, errorText } from '../ui.js';
import { t } from '../i18n.js';

export function render(root, params, { onLogin, notice, languageSwitch }) {
  const username = h('input', { name: 'username', autocomplete: 'username', required: true, attrs: { 'aria-label': t('login.username') } });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true, attrs: { 'aria-label': t('login.password') } });
  const slot = h('div');
  const submit = h('button', { class: 'primary', type: 'submit', text: t('login.submit') });
  const form = h('form', {
    onSubmit: async (e) => {
      e.preventDefault();
      if (!username.value.trim() || !password.value) {
        show(slot, 'error', t('login.enterBoth'));
        return;
      }
      submit.disabled = true;
      try {
        await login(username.value.trim(), password.value);
        await onLogin();
      } catch (err) {
        const text = err.status === 403 ? t('login.wrong') : errorText(err);
        show(slot, 'error', text);
        submit.disabled = false;
      }
    },
  },
  h('label', { class: 'field' }, h('span', { class: 'name', text: t('login.username') }), username),
  h('label', { class: 'field' }, h('span', { class: 'name', text: t('login.password') }), password),
  slot,
  submit);
  if (notice) show(slot, 'warn', notice);
  clear(root).append(h('div', { class: 'login-wrap' },
    h('div', { class: 'login' },
      h('div', { class: 'login-top' },
        h('h1', {}, h('img', { src: '/console/favicon.svg', alt: '' }), 'Tacos'),
        languageSwitch ? languageSwitch() : null),
      h('div', { class: 'muted', text: t('login.subtitle') }),
      form)));
  username.focus();
}
