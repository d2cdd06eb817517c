package main

// The server's HTTP API, for what the SDK cannot do or show (creating a
// namespace, reading a config's type, removing a tag gray) and to check
// what the SDK did from outside.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

var httpClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{Proxy: nil},
}

// api is one server's HTTP API, logged in when it has credentials.
type api struct {
	base     string // http://host:port
	user     string
	password string
	token    string
}

func newAPI(hostPort, user, password string) *api {
	return &api{base: "http://" + hostPort, user: user, password: password}
}

// login gets an access token (POST /nacos/v1/auth/login), as the SDKs do.
func (a *api) login() error {
	if a.user == "" || a.token != "" {
		return nil
	}
	form := url.Values{"username": {a.user}, "password": {a.password}}
	status, body, _, err := a.do(http.MethodPost, "/nacos/v1/auth/login", nil, form)
	if err != nil {
		return err
	}
	if status != 200 {
		return fmt.Errorf("login as %s: %d %s", a.user, status, body)
	}
	var answer struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || answer.AccessToken == "" {
		return fmt.Errorf("login as %s: no accessToken in %s", a.user, body)
	}
	a.token = answer.AccessToken
	return nil
}

// do sends a request (query in the URL, form as the body) with the token.
func (a *api) do(method, path string, query, form url.Values) (int, string, http.Header, error) {
	return a.doAs(method, path, query, form, "")
}

// doAs is do as a client at `ip` (X-Forwarded-For, which the server takes
// as the client's IP, as Nacos does), unless ip is "".
func (a *api) doAs(method, path string, query, form url.Values, ip string) (int, string, http.Header, error) {
	if query == nil {
		query = url.Values{}
	}
	if a.token != "" {
		query.Set("accessToken", a.token)
	}
	target := a.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		return 0, "", nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if ip != "" {
		req.Header.Set("X-Forwarded-For", ip)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s %s: reading: %v", method, path, err)
	}
	return resp.StatusCode, string(raw), resp.Header, nil
}

// getConfig is `GET /nacos/v1/cs/configs` (status, content, headers).
func (a *api) getConfig(dataID, group, tenant string, extra url.Values) (int, string, http.Header, error) {
	if err := a.login(); err != nil {
		return 0, "", nil, err
	}
	query := url.Values{"dataId": {dataID}, "group": {group}, "tenant": {tenant}}
	for k, v := range extra {
		query[k] = v
	}
	return a.do(http.MethodGet, "/nacos/v1/cs/configs", query, nil)
}

// getConfigAs is getConfig as a client at `ip`.
func (a *api) getConfigAs(dataID, group, tenant, ip string) (int, string, error) {
	if err := a.login(); err != nil {
		return 0, "", err
	}
	query := url.Values{"dataId": {dataID}, "group": {group}, "tenant": {tenant}}
	status, body, _, err := a.doAs(http.MethodGet, "/nacos/v1/cs/configs", query, nil, ip)
	return status, body, err
}

// deleteBeta stops a config's beta (`DELETE /nacos/v1/cs/configs?beta=true`).
func (a *api) deleteBeta(dataID, group, tenant string) error {
	if err := a.login(); err != nil {
		return err
	}
	query := url.Values{"dataId": {dataID}, "group": {group}, "tenant": {tenant}, "beta": {"true"}}
	status, body, _, err := a.do(http.MethodDelete, "/nacos/v1/cs/configs", query, nil)
	if err != nil {
		return err
	}
	if status != 200 || !strings.Contains(body, "true") {
		return fmt.Errorf("DELETE beta of %s: %d %s", dataID, status, body)
	}
	return nil
}

// deleteTag removes a config's tag gray (`DELETE /nacos/v1/cs/configs?tag=`).
func (a *api) deleteTag(dataID, group, tenant, tag string) error {
	if err := a.login(); err != nil {
		return err
	}
	query := url.Values{"dataId": {dataID}, "group": {group}, "tenant": {tenant}, "tag": {tag}}
	status, body, _, err := a.do(http.MethodDelete, "/nacos/v1/cs/configs", query, nil)
	if err != nil {
		return err
	}
	if status != 200 || strings.TrimSpace(body) != "true" {
		return fmt.Errorf("DELETE tag %s of %s: %d %s", tag, dataID, status, body)
	}
	return nil
}

// createNamespace is `POST /nacos/v1/console/namespaces` (admin).
func (a *api) createNamespace(id, name string) error {
	if err := a.login(); err != nil {
		return err
	}
	form := url.Values{"customNamespaceId": {id}, "namespaceName": {name}, "namespaceDesc": {"made by the Go SDK test"}}
	status, body, _, err := a.do(http.MethodPost, "/nacos/v1/console/namespaces", nil, form)
	if err != nil {
		return err
	}
	if status != 200 || strings.TrimSpace(body) != "true" {
		return fmt.Errorf("creating namespace %s: %d %s", id, status, body)
	}
	return nil
}

// namespaceConfigCount reads a namespace's configCount from
// `GET /nacos/v1/console/namespaces`.
func (a *api) namespaceConfigCount(id string) (int, error) {
	if err := a.login(); err != nil {
		return 0, err
	}
	status, body, _, err := a.do(http.MethodGet, "/nacos/v1/console/namespaces", nil, nil)
	if err != nil {
		return 0, err
	}
	if status != 200 {
		return 0, fmt.Errorf("listing namespaces: %d %s", status, body)
	}
	var answer struct {
		Data []struct {
			Namespace   string `json:"namespace"`
			ConfigCount int    `json:"configCount"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		return 0, fmt.Errorf("namespaces answer %s: %v", body, err)
	}
	for _, ns := range answer.Data {
		if ns.Namespace == id {
			return ns.ConfigCount, nil
		}
	}
	return 0, fmt.Errorf("namespace %s is not listed: %s", id, body)
}

// serverList is the address server's answer (`GET /nacos/serverlist`).
func (a *api) serverList() ([]string, error) {
	status, body, _, err := a.do(http.MethodGet, "/nacos/serverlist", nil, nil)
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, fmt.Errorf("serverlist: %d %s", status, body)
	}
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out, nil
}
