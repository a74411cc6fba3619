/// Finds every entity a Lovelace config references, wherever cards nest them: views, cards,
/// badges, sections, grids, stacks, conditional cards, picture-elements, rows, header/footer
/// widgets and actions. It keys on the member names the frontend reads entity ids from, so card
/// types it has never heard of are covered too.
public enum EntityReferenceCollector {
    /// Members whose string (or list of strings) value is an entity id.
    static let entityKeys: Set<String> = ["entity", "entity_id", "camera_image"]
    /// Members holding a list of entity ids or of objects that name one.
    static let entityListKeys: Set<String> = ["entities", "badges"]

    /// In document order (object members sorted by name, so the result is stable).
    public static func collect(from config: JSONValue) -> [EntityReference] {
        var found: [EntityReference] = []
        walk(config, path: "", into: &found)
        return found
    }

    private static func walk(_ value: JSONValue, path: String, into found: inout [EntityReference]) {
        switch value {
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                walk(element, path: "\(path)[\(index)]", into: &found)
            }
        case .object(let members):
            for key in members.keys.sorted() {
                guard let member = members[key] else { continue }
                let memberPath = path.isEmpty ? key : "\(path).\(key)"
                if entityKeys.contains(key) {
                    // The card (or row) that holds `entity` is where the user looks.
                    let owner = path.isEmpty ? key : path
                    for candidate in strings(in: member) where EntityID.isValid(candidate) {
                        found.append(EntityReference(entityID: candidate, path: owner))
                    }
                    if case .object = member { walk(member, path: memberPath, into: &found) }
                } else if entityListKeys.contains(key), case .array(let elements) = member {
                    for (index, element) in elements.enumerated() {
                        let elementPath = "\(memberPath)[\(index)]"
                        if case .string(let candidate) = element {
                            if EntityID.isValid(candidate) {
                                found.append(EntityReference(entityID: candidate, path: elementPath))
                            }
                        } else {
                            walk(element, path: elementPath, into: &found)
                        }
                    }
                } else {
                    walk(member, path: memberPath, into: &found)
                }
            }
        default:
            return
        }
    }

    private static func strings(in value: JSONValue) -> [String] {
        switch value {
        case .string(let string): [string]
        case .array(let elements): elements.compactMap(\.stringValue)
        default: []
        }
    }
}
