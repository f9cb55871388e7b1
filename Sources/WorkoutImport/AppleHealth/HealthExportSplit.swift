import Foundation
import Synchronization
import WorkoutFormats

/// What pass 1 gathers from the export, or from one part of it: the workouts' windows and the records, logged with
/// their sources numbered in the order first seen.
final class HealthPassOnePart {
    let scanner: HealthExportScanner
    let log: HealthRecordLog
    private(set) var windows: [HealthWorkoutWindow] = []
    /// The sources' names, by their number in the logged records.
    private(set) var sources: [String] = []
    private var sourceIndex: [String: Int32] = [:]
    /// Records of the sources beyond `sourceLimit` (left out).
    private(set) var excessSourceRecords = 0
    /// The last source's number: records come grouped by source, and the scan hands over its name's one text.
    private var lastSource: (name: String, index: Int32)?
    /// Forbidden characters the part's parse read as spaces.
    var forbidden = 0
    /// Whether the part met a source beyond `sourceLimit` and `stopsAtSourceLimit`: its reading is to end there.
    private(set) var overflowed = false

    /// - Parameter inside: the elements open where the part begins (`HealthExportScanner.init(pass:inside:)`).
    /// - Parameter stopsAtSourceLimit: a source beyond the limit sets `overflowed` instead of leaving its records
    ///   out (a later part cannot tell which of its sources the parts before it named already).
    init(
        inside: [String] = [], stopsAtSourceLimit: Bool = false, limits: ImportOptions, spoolLimit: Int,
        sourceLimit: Int, folder: String
    ) {
        scanner = HealthExportScanner(pass: .workoutsAndRecords, inside: inside)
        log = HealthRecordLog(limit: spoolLimit, folder: folder)
        // Which workouts are refused is decided before anything is gathered for them: a refused workout takes no
        // record, recovery or route point (those are counted as left out), and its window is never searched.
        scanner.onWorkout = { [unowned self] workout in
            windows.append(
                HealthWorkoutWindow(
                    start: workout.start, end: workout.end, sourceName: workout.sourceName,
                    refusal: HealthExportReading.refusal(of: workout, limits: limits), span: workout.span))
        }
        scanner.onRecord = { [unowned self] record, source in
            var record = record
            if let last = lastSource, last.name == source {
                record.source = last.index
            } else if let index = sourceIndex[source] {
                record.source = index
            } else {
                // Every name is kept until the end: beyond the limit a new name's records are left out, so that an
                // export naming a new source in each record cannot grow memory with its records.
                guard sources.count < sourceLimit else {
                    if stopsAtSourceLimit { overflowed = true }
                    excessSourceRecords += 1
                    return
                }
                record.source = Int32(sources.count)
                sourceIndex[source] = record.source
                sources.append(source)
            }
            lastSource = (source, record.source)
            log.append(record)
        }
    }

    /// Takes the sources of a later part (`later`, numbered by it) after this one's, in their order: each later
    /// number's number here, or nil for a source beyond `sourceLimit` (its records are left out, as if read here).
    func numbers(for later: [String], sourceLimit: Int) -> [Int32?] {
        later.map { name in
            if let index = sourceIndex[name] { return index }
            guard sources.count < sourceLimit else { return nil }
            let index = Int32(sources.count)
            sourceIndex[name] = index
            sources.append(name)
            return index
        }
    }
}

/// An export file open for pass 1, which a large one reads in two halves at once (`HealthExportSplit`).
struct HealthSplittableFile: Sendable {
    /// Kept open by the caller until the reading has returned.
    var descriptor: Int32
    var size: Int
    /// Files smaller than this are read by one parse (tests make it small).
    var minimumSize = HealthExportSplit.minimumSize
}

/// The second half of a large export file's first pass, read on a thread of its own while the caller reads the first.
///
/// Pass 1 is one parse of the whole XML, the import's longest stretch on one core. A file of at least `minimumSize`
/// bytes is cut near its middle at a line between two of the root's children (the end of one element's line, a
/// `Record` start tag on the next), and the part after the cut is parsed here (as inside `HealthData`, its positions
/// the document's: the lines before the cut are counted first) while the caller parses the part before it, told to
/// stop at the cut. The cut is only a guess until that parse reaches it between two children of `HealthData` (not in
/// a comment or a text): then the two parts' results, joined in document order, are one parse's. Otherwise the
/// caller's parse goes on past the cut to the end and this part's results are dropped (`cancel()`). A second part
/// naming more sources than the limit cannot be joined (which of them the first part named is not known to it): it
/// stops there, and the caller reads on from the cut itself (`wait()` gives nil).
final class HealthExportSplit: @unchecked Sendable {
    /// Files smaller than this are read by one parse.
    static let minimumSize = 64 << 20
    /// Bytes after the middle searched for a cut.
    static let searchedBytes = 1 << 20

    /// The file, open (the caller's descriptor).
    let file: HealthSplittableFile
    /// The cut: the offset of the line end where the first part stops and after which this part begins.
    let cut: Int
    private let finished = DispatchSemaphore(value: 0)
    private let cancelled = Atomic<Bool>(false)
    // Set on the part's thread before `finished` is signalled, read after it is waited for (the semaphore orders
    // them); `joined` by the caller only.
    private var part: HealthPassOnePart?
    private var failure: HealthImportError?
    private var joined = false

    private init(file: HealthSplittableFile, cut: Int) {
        self.file = file
        self.cut = cut
    }

    /// Starts reading the second part of `file` when it is at least its `minimumSize` and a cut is found; nil
    /// otherwise. The file's descriptor must stay open until `wait()` or `cancel()` has returned.
    static func start(
        _ file: HealthSplittableFile, entry: String, limits: ImportOptions, spoolLimit: Int, sourceLimit: Int,
        folder: String
    ) -> HealthExportSplit? {
        guard file.size >= max(file.minimumSize, 2),
            let cut = cut(descriptor: file.descriptor, near: file.size / 2, size: file.size)
        else { return nil }
        let split = HealthExportSplit(file: file, cut: cut)
        let thread = Thread {
            split.run(entry: entry, limits: limits, spoolLimit: spoolLimit, sourceLimit: sourceLimit, folder: folder)
        }
        thread.name = "workout-health-pass-1"
        thread.start()
        return split
    }

    /// Waits for the second part: its results, or the error it met (`notWellFormed` with the document's position);
    /// nil when they cannot be joined to the first part's (the caller reads the second part itself).
    func wait() throws(HealthImportError) -> HealthPassOnePart? {
        join()
        if let failure { throw failure }
        guard let part, !part.overflowed else { return nil }
        return part
    }

    /// Stops the second part's reading and waits for its thread; its results are dropped.
    func cancel() {
        cancelled.store(true, ordering: .relaxed)
        join()
        part = nil
    }

    private func join() {
        guard !joined else { return }
        finished.wait()
        joined = true
    }

    private func run(entry: String, limits: ImportOptions, spoolLimit: Int, sourceLimit: Int, folder: String) {
        defer { finished.signal() }
        let descriptor = file.descriptor
        guard let lines = Self.lineEnds(descriptor: descriptor, through: cut, cancelled: isCancelled) else { return }
        let part = HealthPassOnePart(
            inside: ["HealthData"], stopsAtSourceLimit: true, limits: limits, spoolLimit: spoolLimit,
            sourceLimit: sourceLimit, folder: folder)
        do {
            part.forbidden = try HealthExportReading.scan(
                entry: entry, { HealthExportReading.part(descriptor: descriptor, from: self.cut + 1, to: Int.max) },
                part.scanner, startingAt: XMLPosition(offset: cut + 1, line: lines + 1, column: 1),
                inside: ["HealthData"], cancelled: { [unowned part] in self.isCancelled() || part.overflowed }
            ).forbidden
            self.part = part
        } catch {
            failure = error
        }
    }

    private func isCancelled() -> Bool { cancelled.load(ordering: .relaxed) }

    /// A cut at or after `middle` of a file of `size` bytes: the offset of a line end right after a `>`, whose next
    /// line (after spaces or tabs) begins with a `Record` start tag; nil when none is in the bytes searched.
    static func cut(descriptor: Int32, near middle: Int, size: Int) -> Int? {
        var bytes = [UInt8](repeating: 0, count: min(searchedBytes, max(0, size - middle)))
        guard !bytes.isEmpty else { return nil }
        let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(middle)) }
        guard got > 0 else { return nil }
        let tag = Array("<Record".utf8)
        var index = 0
        while index + 1 < got {
            defer { index += 1 }
            guard bytes[index] == UInt8(ascii: ">"), bytes[index + 1] == UInt8(ascii: "\n") else { continue }
            var next = index + 2
            while next < got, bytes[next] == UInt8(ascii: " ") || bytes[next] == UInt8(ascii: "\t") { next += 1 }
            guard next + tag.count < got, bytes[next..<next + tag.count].elementsEqual(tag) else { continue }
            let after = bytes[next + tag.count]
            if after == UInt8(ascii: " ") || after == UInt8(ascii: "\t") || after == UInt8(ascii: "\n") {
                return middle + index + 1
            }
        }
        return nil
    }

    /// The line ends (`\n`) in the file's bytes `0...last`; nil when they cannot be read or the reading is cancelled.
    static func lineEnds(descriptor: Int32, through last: Int, cancelled: () -> Bool) -> Int? {
        var block = [UInt8](repeating: 0, count: min(1 << 20, max(1, last + 1)))
        var offset = 0
        var count = 0
        while offset <= last {
            if cancelled() { return nil }
            let wanted = min(block.count, last + 1 - offset)
            let got = block.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, wanted, off_t(offset)) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return nil }
            block.withUnsafeBytes { bytes in
                guard var at = bytes.baseAddress else { return }
                let end = at + got
                while at < end, let found = memchr(at, 0x0A, end - at) {
                    count += 1
                    at = UnsafeRawPointer(found) + 1
                }
            }
            offset += got
        }
        return count
    }
}
