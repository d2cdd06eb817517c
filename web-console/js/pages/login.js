// The login page: POST /nacos/v1/auth/login, then the shell.

import { login } from '../api.js';
import { h, clear, show, errorText } from '../ui.js';

export function render(root, params, { onLogin, notice }) {
  const username = h('input', { name: 'username', autocomplete: 'username', required: true, attrs: { 'aria-label': 'Username' } });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true, attrs: { 'aria-label': 'Password' } });
  const slot = h('div');
  const submit = h('button', { class: 'primary', type: 'submit', text: 'Log in' });
  const form = h('form', {
    onSubmit: async (e) => {
      e.preventDefault();
      if (!username.value.trim() || !password.value) {
        show(slot, 'error', 'Enter your username and password.');
        return;
      }
      submit.disabled = true;
      try {
        await login(username.value.trim(), password.value);
        await onLogin();
      } catch (err) {
        const text = err.status === 403 ? 'Wrong username or password.' : errorText(err);
        show(slot, 'error', text);
        submit.disabled = false;
      }
    },
  },
  h('label', { class: 'field' }, h('span', { class: 'name', text: 'Username' }), username),
  h('label', { class: 'field' }, h('span', { class: 'name', text: 'Password' }), password),
  slot,
  submit);
  if (notice) show(slot, 'warn', notice);
  clear(root).append(h('div', { class: 'login-wrap' },
    h('div', { class: 'login' },
      h('h1', {}, h('img', { src: '/console/favicon.svg', alt: '' }), 'Tacos'),
      h('div', { class: 'muted', text: 'Config center console' }),
      form)));
  username.focus();
}
