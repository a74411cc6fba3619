import CYaml
import HADeployCore

/// Finds, in one linear pass over libyaml's events and before Yams builds the tree, the two uses of
/// anchors and aliases that make composing a small file take minutes ("billion laughs"):
///
/// - an alias used as a mapping key (directly or inside a key): Yams compares keys for duplicates
///   by walking them whole, so a key that expands to millions of nodes costs that much per compare;
/// - aliases that expand the document past ``maxExpandedNodes`` nodes: every reader of the tree
///   would walk the expansion.
///
/// Anchors and aliases used as plain values (a shared block of settings) stay allowed. A document
/// libyaml cannot parse passes: Yams then reports its syntax error with the position.
enum YAMLAliasGuard {
    /// Far more than any device matrix has (the committed one has a few hundred nodes).
    static let maxExpandedNodes = 100_000

    struct Problem: Error {
        var line: Int
        var column: Int
        var message: String
    }

    private struct Frame {
        var isMapping: Bool
        var anchor: String?
        var line: Int
        var column: Int
        /// Nodes in this collection, aliases expanded (itself included).
        var nodes = 1
        var holdsAlias = false
        /// Mappings: whether the next child is a key.
        var expectingKey = true
    }

    static func check(_ text: String) -> Problem? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return nil }
        defer { yaml_parser_delete(&parser) }
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBufferPointer { buffer -> Problem? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var sizes: [String: Int] = [:]
            var stack: [Frame] = []
            // Every node of the document so far, aliases expanded. Each anchored node is part of the
            // document, so no size can exceed it: the check below keeps them all far from overflow.
            var total = 0
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                let line = Int(event.start_mark.line) + 1
                let column = Int(event.start_mark.column) + 1
                var finished: (nodes: Int, holdsAlias: Bool, anchor: String?, alias: String?, at: (Int, Int))?
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return nil
                case YAML_DOCUMENT_START_EVENT:
                    sizes = [:]
                    total = 0
                case YAML_SCALAR_EVENT:
                    total += 1
                    finished = (1, false, name(event.data.scalar.anchor), nil, (line, column))
                case YAML_ALIAS_EVENT:
                    let alias = name(event.data.alias.anchor) ?? ""
                    let nodes = sizes[alias] ?? 1
                    total += nodes
                    finished = (nodes, true, nil, alias, (line, column))
                case YAML_SEQUENCE_START_EVENT:
                    total += 1
                    stack.append(
                        Frame(
                            isMapping: false, anchor: name(event.data.sequence_start.anchor), line: line,
                            column: column, expectingKey: false))
                case YAML_MAPPING_START_EVENT:
                    total += 1
                    stack.append(
                        Frame(
                            isMapping: true, anchor: name(event.data.mapping_start.anchor), line: line,
                            column: column))
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    guard let frame = stack.popLast() else { return nil }
                    finished = (frame.nodes, frame.holdsAlias, frame.anchor, nil, (frame.line, frame.column))
                default:
                    break
                }
                if total > maxExpandedNodes {
                    return Problem(
                        line: line, column: column,
                        message: "the aliases expand this file to more than \(maxExpandedNodes) values, "
                            + "which no device matrix needs (a \"billion laughs\" document?): write the values "
                            + "out, or repeat fewer")
                }
                guard let node = finished else { continue }
                if let anchor = node.anchor { sizes[anchor] = node.nodes }
                guard var parent = stack.popLast() else { continue }
                let isKey = parent.isMapping && parent.expectingKey
                if parent.isMapping { parent.expectingKey.toggle() }
                parent.nodes += node.nodes
                parent.holdsAlias = parent.holdsAlias || node.holdsAlias
                stack.append(parent)
                if isKey && node.holdsAlias {
                    let what = node.alias.map { "the alias *\($0)" } ?? "a key that holds an alias"
                    return Problem(
                        line: node.at.0, column: node.at.1,
                        message: "\(what) is used as a mapping key: devices.yaml accepts anchors and aliases "
                            + "only as values; write the key out")
                }
            }
        }
    }

    private static func name(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        guard let pointer else { return nil }
        return String(cString: pointer)
    }
}
