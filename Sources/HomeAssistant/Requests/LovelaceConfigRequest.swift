/// `lovelace/config`: a dashboard's saved config; `urlPath` nil means the default dashboard.
/// HA answers `config_not_found` both for a dashboard that does not exist
/// ("Unknown config specified: …") and one never saved ("No config found.").
public struct LovelaceConfigRequest: HomeAssistantRequest {
    public typealias Response = LovelaceConfig
    public var type: String { "lovelace/config" }
    public let urlPath: String?

    public init(urlPath: String? = nil) { self.urlPath = urlPath }

    public var parameters: [String: JSONValue] {
        urlPath.map { ["url_path": .string($0)] } ?? [:]
    }
}
