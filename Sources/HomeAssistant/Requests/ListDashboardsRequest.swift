/// `lovelace/dashboards/list`: the storage-mode dashboards (the default dashboard is not listed).
public struct ListDashboardsRequest: HomeAssistantRequest {
    public typealias Response = [LovelaceDashboard]
    public var type: String { "lovelace/dashboards/list" }
    public init() {}
}
