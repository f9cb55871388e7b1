// The baseline of the Apple Health import benchmark (scripts/bench.py health): a plain streaming parse of
// the export with the reader's own pull parser (Sources/WorkoutImport/AppleHealth/XMLStream.swift, built
// with it by swiftc -O): every event, every attribute made text, nothing else done.
//
//     xml-parse-baseline FILE   prints: events elements attributes bytes
import Foundation

guard CommandLine.arguments.count == 2, let handle = FileHandle(forReadingAtPath: CommandLine.arguments[1]) else {
    FileHandle.standardError.write(Data("usage: xml-parse-baseline FILE\n".utf8))
    exit(2)
}
let descriptor = handle.fileDescriptor
let parser = XMLPullParser(allowsFragments: true) { buffer in
    let got = read(descriptor, buffer.baseAddress, buffer.count)
    guard got >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    return got
}
var events = 0
var elements = 0
var attributes = 0
do {
    while let event = try parser.next() {
        events += 1
        if case .start(_, let list) = event {
            elements += 1
            attributes += list.count
        }
    }
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
print(events, elements, attributes, parser.position.offset)
