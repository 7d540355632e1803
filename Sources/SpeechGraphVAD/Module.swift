// Voice activity detection; see VADNode.swift.
import SpeechGraphCore
