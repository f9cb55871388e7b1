import Foundation
import Testing
import WorkoutImport
import WorkoutModel
import WorkoutReplay
import WorkoutReport
import WorkoutSimulator
import WorkoutStore
@_exported import WorkoutTestSupport

/// The repository's root (this file is Tests/WorkoutReportTests/Support.swift).
/// The repository's root folder (WorkoutTestSupport).
let repositoryRoot = SharedData.repository

/// The real recordings: ../shared/data next to the repository, or $WORKOUT_SHARED_DATA (WorkoutTestSupport).
let sharedData = URL(fileURLWithPath: SharedData.directory)

/// A real recording (`name` with its .fit extension).
func sharedFIT(_ name: String) -> String {
    sharedData.appendingPathComponent("fit/\(name)").path
}

/// The device's figures of a real recording as Garmin's FIT SDK decoded them (shared/data/expected).
func expectedDevice(_ name: String) throws -> [String: Any] {
    let base = (name as NSString).deletingPathExtension
    let url = sharedData.appendingPathComponent("expected/\(base).json")
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url))
    return try #require((object as? [String: Any])?["device"] as? [String: Any])
}

/// A temporary folder, removed when `body` returns.
func withTemporaryFolder<T>(_ body: (URL) throws -> T) throws -> T {
    let folder = try temporaryFolder("workout-report")
    defer { try? FileManager.default.removeItem(at: folder) }
    return try body(folder)
}

/// Replays a built-in scenario into a new store in `folder` and reads it back through the store's API.
func replayed(_ scenario: String, seed: UInt64, in folder: URL) throws -> ReportInput {
    let store = try WorkoutStore(path: folder.appendingPathComponent("\(scenario)-\(seed).sqlite").path)
    let result = try RaceReplay.run(try Scenario.load(scenario), seed: seed, into: store, options: ReplayOptions())
    return try ReportInput.load(id: result.workout.id, from: store)
}

/// Imports a real FIT file into a new store in `folder` and reads it back.
func imported(_ name: String, in folder: URL) throws -> ReportInput {
    let store = try WorkoutStore(path: folder.appendingPathComponent("\(name).sqlite").path)
    let result = try FileImport.run(path: sharedFIT(name), into: store)
    return try ReportInput.load(id: result.workout.id, from: store)
}

// MARK: Chromium

/// Headless Chromium (Debian's `chromium`, which the test command installs), run as a user would
/// open the file: no network, a throw-away profile, generous time limits for a loaded 2-core machine.
enum Chromium {
    static var executable: String? {
        for path in ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        return nil
    }

    struct Run {
        var status: Int32
        var stdout: Data
        var stderr: String
        var seconds: Double
    }

    /// Runs chromium headless on `page` with `arguments` (e.g. `--dump-dom`), killed after `timeout`.
    static func run(_ arguments: [String], page: URL, timeout: TimeInterval = 180) throws -> Run {
        let chromium = try #require(executable, "chromium is not installed: run scripts/test.sh (it installs it)")
        return try withTemporaryFolder { folder in
            let out = folder.appendingPathComponent("stdout")
            let err = folder.appendingPathComponent("stderr")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            let outHandle = try FileHandle(forWritingTo: out)
            let errHandle = try FileHandle(forWritingTo: err)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: chromium)
            var flags = [
                "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-dev-shm-usage", "--disable-background-networking", "--disable-sync", "--mute-audio",
                "--hide-scrollbars", "--user-data-dir=\(folder.appendingPathComponent("profile").path)",
                // Network off: a self-contained page needs none, and a request would fail the checks.
                "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
            ]
            if getuid() == 0 { flags.append("--no-sandbox") }  // Chromium refuses to run as root with its sandbox
            process.arguments = flags + arguments + [page.absoluteString]
            process.standardOutput = outHandle
            process.standardError = errHandle
            var environment = ProcessInfo.processInfo.environment
            environment["HOME"] = folder.path
            process.environment = environment
            let started = Date()
            try process.run()
            if !waitFor(timeout, { !process.isRunning }) {
                process.terminate()
                process.waitUntilExit()
                Issue.record("chromium did not finish within \(Int(timeout)) s")
            }
            process.waitUntilExit()
            let seconds = Date().timeIntervalSince(started)
            try outHandle.close()
            try errHandle.close()
            return Run(
                status: process.terminationStatus, stdout: try Data(contentsOf: out),
                stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self), seconds: seconds)
        }
    }

    /// The page's DOM after load, as Chromium serialises it.
    static func dumpDOM(_ page: URL) throws -> (dom: String, seconds: Double) {
        let run = try run(["--dump-dom", "--virtual-time-budget=2000"], page: page)
        try #require(run.status == 0, "chromium --dump-dom failed (\(run.status)): \(run.stderr.suffix(2000))")
        return (String(decoding: run.stdout, as: UTF8.self), run.seconds)
    }

    /// A PNG screenshot of the page.
    static func screenshot(_ page: URL, to png: URL) throws {
        let run = try run(["--screenshot=\(png.path)", "--window-size=1200,1800"], page: page)
        try #require(run.status == 0, "chromium --screenshot failed (\(run.status)): \(run.stderr.suffix(2000))")
    }
}

// MARK: reading the DOM back

/// An element of the dumped DOM: its tag, attributes and (for text elements) its text.
struct Element {
    var tag: String
    var attributes: [String: String]
    var text: String

    subscript(_ name: String) -> String? { attributes[name] }

    func number(_ name: String) -> Double? { attributes[name].flatMap(Double.init) }

    var classes: Set<String> { Set((attributes["class"] ?? "").split(separator: " ").map(String.init)) }
}

/// Elements of `tag` in `html` (start tags, attributes decoded; text up to the next tag).
func elements(_ tag: String, in html: String) -> [Element] {
    let pattern = "<\(tag)\\b([^>]*)>([^<]*)"
    guard let regex = try? NSRegularExpression(pattern: pattern, options: [.caseInsensitive]) else { return [] }
    let attribute = try? NSRegularExpression(pattern: "([A-Za-z_:][-A-Za-z0-9_:.]*)=\"([^\"]*)\"")
    let text = html as NSString
    return regex.matches(in: html, range: NSRange(location: 0, length: text.length)).map { match in
        let attributesText = text.substring(with: match.range(at: 1))
        var attributes: [String: String] = [:]
        for found in attribute?.matches(
            in: attributesText, range: NSRange(location: 0, length: (attributesText as NSString).length)) ?? []
        {
            let name = (attributesText as NSString).substring(with: found.range(at: 1))
            attributes[name] = unescape((attributesText as NSString).substring(with: found.range(at: 2)))
        }
        return Element(tag: tag, attributes: attributes, text: unescape(text.substring(with: match.range(at: 2))))
    }
}

/// The part of `html` from the element with `id` to its closing tag (first one after it).
func fragment(id: String, tag: String, in html: String) -> String? {
    guard let start = html.range(of: "id=\"\(id)\"") else { return nil }
    guard let end = html.range(of: "</\(tag)>", range: start.upperBound..<html.endIndex) else { return nil }
    return String(html[start.lowerBound..<end.upperBound])
}

private func unescape(_ text: String) -> String {
    text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
        .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
        .replacingOccurrences(of: "&amp;", with: "&")
}

/// Distinct colours and the share of pixels that are not the page's white, of a PNG (decoded by
/// scripts/png-stats.py with Python's standard library).
func pngStatistics(_ png: URL) throws -> (colours: Int, inked: Double) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", repositoryRoot.appendingPathComponent("scripts/png-stats.py").path, png.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "png-stats.py failed on \(png.path)")
    let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
    try #require(fields.count == 2, "png-stats.py printed \(String(decoding: data, as: UTF8.self))")
    return (Int(fields[0]) ?? 0, Double(fields[1]) ?? 0)
}
