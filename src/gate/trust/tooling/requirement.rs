//! The package a requirement line names: by name (PEP 508) or by where it installs from.

/// The package a PEP 508 requirement names, when the whole text is one
/// (`name[extras] >=1,<2 ; marker`, `name @ url`).
pub(super) fn requirement_name(text: &str) -> Option<&str> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)))
        .unwrap_or(t.len());
    let (name, rest) = (&t[..end], t[end..].trim_start());
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let rest = match rest.strip_prefix('[') {
        Some(r) => r.split_once(']')?.1.trim_start(),
        None => rest,
    };
    let spec_end = rest.find([';', '@']).unwrap_or(rest.len());
    let spec = rest[..spec_end].trim();
    let spec_ok = spec.is_empty()
        || (spec.starts_with(['<', '>', '=', '!', '~', '('])
            && spec
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "<>=!~.,*+ ()".contains(c)));
    spec_ok.then_some(name)
}

/// The package a requirements line installs from a URL or a path rather than by name
/// (`git+https://…@rev#subdirectory=python/pytest-flakegate`, `-e ./vendor/pytest-plugin`,
/// `./dist/pkg-1.0-py3-none-any.whl`): its `#egg=` name, else the last part of its
/// `subdirectory=`, else of the path (a wheel's or archive's name up to its version).
pub(super) fn url_requirement(text: &str) -> Option<String> {
    let t = text.trim();
    let is_url = t.contains("://") || t.starts_with("git+") || t.starts_with("file:");
    if !is_url && !t.starts_with(['.', '/']) {
        return None;
    }
    let (path, fragment) = t.split_once('#').unwrap_or((t, ""));
    let param = |key: &str| {
        fragment
            .split('&')
            .find_map(|kv| kv.strip_prefix(key))
            .map(|v| v.trim_end_matches('/'))
    };
    let last = |p: &str| p.trim_end_matches('/').rsplit('/').next().unwrap_or("").to_string();
    let name = if let Some(egg) = param("egg=") {
        egg.to_string()
    } else if let Some(sub) = param("subdirectory=") {
        last(sub)
    } else {
        // `…/repo.git@v1.2`: the repository; `pkg-1.0.tar.gz`, `pkg-1.0-py3-none-any.whl`: the package.
        let path = path.split('?').next().unwrap_or(path);
        let base = last(if is_url {
            path.rsplit_once('@').map_or(path, |(p, _)| p)
        } else {
            path
        });
        let base = base.strip_suffix(".git").unwrap_or(&base).to_string();
        if [".whl", ".tar.gz", ".zip", ".tar.bz2"]
            .iter()
            .any(|e| base.ends_with(e))
        {
            base.split('-').next().unwrap_or("").to_string()
        } else {
            base
        }
    };
    let name = name.trim();
    (!name.is_empty() && name.starts_with(|c: char| c.is_ascii_alphanumeric())).then(|| name.to_string())
}
