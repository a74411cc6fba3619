import SSHTransport

/// The remote commands a jailbroken-device deploy runs; each can be overridden from devices.yaml.
///
/// Commands are templates run by the login shell. Placeholders are replaced by shell-quoted values:
/// `{app}` installed app path, `{staged}` uploaded copy before the move, `{name}` app name without `.app`,
/// `{executable}` CFBundleExecutable, `{bundle_id}` CFBundleIdentifier, `{install_dir}`, `{owner}`,
/// and for `launch` also `{server_url}`, `{dashboard}`, `{kiosk}` (YES/NO), `{deploy_id}`, `{device_id}`,
/// `{args_file}` (and every non-secret argument by flag name, e.g. `{HADeployID}`).
/// There is deliberately no placeholder for the access token: see `launch`.
public struct JailbreakCommands: Sendable, Equatable {
    /// Sets ownership and modes of the uploaded copy before it is moved into place.
    public var permissions: String
    /// Refreshes SpringBoard's icon cache so a new app shows up.
    public var refreshIcons: String
    /// Starts the app (the jailbreak's `open` takes the bundle id only). The app's settings go into its
    /// preferences plist first. The launch arguments (`-HAServerURL URL -HAAccessToken TOKEN -HADashboard NAME
    /// -HAKioskMode YES|NO -HADeployID ID`) arrive on the command's **stdin, one per line**, so the token
    /// never appears in a command line or the remote process list. If the template contains `{args_file}`,
    /// the same lines are also written to a 0600 file in a private 0700 directory, removed once the
    /// command exits.
    public var launch: String
    /// Stops the app — by its exact executable path (`{executable_pattern}`: a `pgrep -f` pattern of
    /// it), as the app's own script does, never another app with the same executable name. Exit status
    /// 1 (nothing to kill) counts as "was not running".
    public var kill: String
    /// Takes a screenshot. Empty (the default): the app's own trigger, `/tmp/take_screenshot` →
    /// `/tmp/screenshot.png`. With `{output}`, the command writes the image to that remote path, which is
    /// read back and removed; otherwise the image is the command's stdout.
    public var screenshot: String
    /// Re-signs the executable so the jailbroken kernel runs it, with the signed build's entitlements:
    /// `ldid -S{entitlements} {staged_executable}` (`{entitlements}` is the uploaded plist's path, empty
    /// when the build carries none; skipped when `ldid` is missing).
    public var sign: String

    public init(
        permissions: String = "chown -R {owner} {staged} && chmod -R u+rwX,go+rX,go-w {staged}",
        refreshIcons: String = "uicache",
        launch: String = "open {bundle_id}",
        kill: String = Self.stopByPath,
        screenshot: String = "",
        sign: String = "ldid -S{entitlements} {staged_executable}"
    ) {
        self.permissions = permissions
        self.refreshIcons = refreshIcons
        self.launch = launch
        self.kill = kill
        self.screenshot = screenshot
        self.sign = sign
    }

    /// Ends the processes whose command line starts with the app's executable path (SIGTERM, then
    /// SIGKILL after 5 s); exit 1 when there was none.
    public static let stopByPath = """
        pids=$(pgrep -f {executable_pattern}) || exit 1
        kill $pids
        i=0
        while pgrep -f {executable_pattern} >/dev/null && [ $i -lt 5 ]; do sleep 1; i=$((i + 1)); done
        pids=$(pgrep -f {executable_pattern}) && kill -9 $pids
        exit 0
        """

    /// Placeholders every command may use; `launch` and `screenshot` add their own.
    static let commonPlaceholders = [
        "app", "staged", "name", "executable", "bundle_id", "install_dir", "owner", "executable_path",
        "executable_pattern",
    ]
    static let launchPlaceholders = [
        "server_url", "dashboard", "kiosk", "deploy_id", "device_id", "args_file", "HAServerURL",
        "HADashboard", "HAKioskMode", "HADeployID", "HADeviceID",
    ]

    /// Checks every template for unknown placeholders (a typo, or an attempt at `{token}`).
    func validate() throws {
        func check(_ template: String, _ field: String, _ extra: [String]) throws {
            let values = Dictionary(uniqueKeysWithValues: (Self.commonPlaceholders + extra).map { ($0, "x") })
            _ = try Self.expand(template, values, field: field)
        }
        try check(permissions, "permissions", [])
        try check(refreshIcons, "refresh", [])
        try check(launch, "launch", Self.launchPlaceholders)
        try check(kill, "kill", [])
        try check(screenshot, "screenshot", ["output"])
        try check(sign, "sign", ["staged_executable", "entitlements"])
    }

    /// Replaces `{key}` placeholders with shell-quoted values; refuses unknown ones (typos, `{token}`).
    static func expand(_ template: String, _ values: [String: String], field: String) throws -> String {
        var result = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else {
                result += rest[open...]
                rest = ""
                break
            }
            let key = String(rest[rest.index(after: open)..<close])
            guard let value = values[key] else {
                let hint =
                    key.lowercased().contains("token")
                    ? " (the access token is only passed on stdin or through {args_file})" : ""
                throw SSHError.invalidConfiguration(
                    "unknown placeholder {\(key)} in the \(field) command '\(template)'\(hint); known: "
                        + values.keys.sorted().map { "{\($0)}" }.joined(separator: " "))
            }
            result += ShellQuote.quote(value)
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }
}
