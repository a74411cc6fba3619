/// An installation_proxy failure as the device reports it (`Error`, `ErrorDescription`, `ErrorDetail`).
struct InstallError: Error {
    let name: String
    let description: String
    /// The MobileInstallation error code when known (printed by ideviceinstaller as 0x…).
    let detail: Int?

    init(_ name: String, _ description: String, detail: Int? = nil) {
        self.name = name
        self.description = description
        self.detail = detail
    }
}
