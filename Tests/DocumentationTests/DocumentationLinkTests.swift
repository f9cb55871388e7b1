import Foundation
import Testing

/// Every relative link of the README, the guides, CONTRIBUTING, the CHANGELOG and the DocC catalogs
/// names a file of the repository, and a `#fragment` names a heading of that file.
///
/// Links to the web are not followed (no network in tests); DocC's own `<doc:…>` and ``symbol`` links
/// are checked by scripts/check-docs.sh (DocC, warnings as errors) in scripts/test.sh.
@Suite struct DocumentationLinkTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The documents whose links are checked, relative to the repository's root.
    static let documents: [String] = {
        let manager = FileManager.default
        var paths = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
        for folder in ["docs", "docs/schemas"] {
            let names = (try? manager.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)) ?? []
            paths += names.filter { $0.hasSuffix(".md") }.sorted().map { "\(folder)/\($0)" }
        }
        let sources = (try? manager.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)) ?? []
        for module in sources.sorted() {
            let catalog = "Sources/\(module)/Documentation.docc"
            let names = (try? manager.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path)) ?? []
            paths += names.filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
        }
        return paths
    }()

    @Test func theDocumentsAreFound() {
        #expect(Self.documents.contains("README.md"))
        #expect(Self.documents.contains("docs/storage.md"))
        #expect(Self.documents.contains("Sources/WorkoutEngine/Documentation.docc/SessionAndBuilder.md"))
    }

    @Test(arguments: documents) func everyRelativeLinkResolves(_ document: String) throws {
        let file = Self.root.appendingPathComponent(document)
        let text = try String(contentsOf: file, encoding: .utf8)
        for link in MarkdownLinks.targets(in: text) where !MarkdownLinks.isExternal(link) {
            let (path, fragment) = MarkdownLinks.split(link)
            let target = path.isEmpty ? file : file.deletingLastPathComponent().appendingPathComponent(path)
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: target.standardizedFileURL.path, isDirectory: &isFolder)
            #expect(exists, "\(document): the link \(link) names no file (\(target.standardizedFileURL.path))")
            guard exists, let fragment, !isFolder.boolValue, target.pathExtension == "md" else { continue }
            let anchors = MarkdownLinks.anchors(in: try String(contentsOf: target, encoding: .utf8))
            #expect(anchors.contains(fragment), "\(document): the link \(link) names no heading of \(path)")
        }
    }

    @Test func linksAreReadOutsideCodeOnly() {
        let text = """
            See [the guide](docs/a.md#b) and `[not](a link)`.
            ```
            [nor](this)
            ```
            [web](https://example.com) [here](#top)
            """
        #expect(MarkdownLinks.targets(in: text) == ["docs/a.md#b", "https://example.com", "#top"])
    }

    @Test func anchorsFollowGitHubsRule() {
        let text = "# Top\n## `workout record`\n### Swimming, recovery and multisport detection\n## Top\n"
        #expect(
            MarkdownLinks.anchors(in: text)
                == ["top", "workout-record", "swimming-recovery-and-multisport-detection", "top-1"])
    }
}

/// Reading links and headings out of Markdown, as GitHub renders it (enough for our documents).
enum MarkdownLinks {
    /// The targets of `[text](target)` links outside fenced code blocks and code spans, in order.
    static func targets(in text: String) -> [String] {
        var targets: [String] = []
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                fenced.toggle()
                continue
            }
            if fenced { continue }
            let prose = line.replacing(/`[^`]*`/, with: "")
            for match in prose.matches(of: /\[[^\]]*\]\(([^)\s]+)\)/) {
                targets.append(String(match.output.1))
            }
        }
        return targets
    }

    static func isExternal(_ link: String) -> Bool {
        link.hasPrefix("http://") || link.hasPrefix("https://") || link.hasPrefix("mailto:")
    }

    static func split(_ link: String) -> (path: String, fragment: String?) {
        guard let hash = link.firstIndex(of: "#") else { return (link, nil) }
        return (String(link[..<hash]), String(link[link.index(after: hash)...]))
    }

    /// The anchors GitHub gives the headings: lower case, punctuation dropped, spaces as hyphens,
    /// a repeated heading numbered (`-1`, `-2`, …).
    static func anchors(in text: String) -> [String] {
        var anchors: [String] = []
        var seen: [String: Int] = [:]
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                fenced.toggle()
                continue
            }
            guard !fenced, line.hasPrefix("#") else { continue }
            let title = line.drop(while: { $0 == "#" }).trimmingCharacters(in: .whitespaces)
            var slug = ""
            for character in title.lowercased() {
                if character == " " {
                    slug.append("-")
                } else if character.isLetter || character.isNumber || character == "-" || character == "_" {
                    slug.append(character)
                }
            }
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.append(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }
}
