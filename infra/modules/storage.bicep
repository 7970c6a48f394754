// Storage: payload/result/control containers, the incoming container of uploaded batch
// files (docs/uploads.md), work queues (priority x partition) with
// their poison queues, the output queue, and the tables. The names are Settings' defaults
// (tests/infra/test_names.py checks them both ways); the roles do not create anything in
// Azure (BILLING_PROVISION_RESOURCES=false), since their identities may not.
param name string
param location string
param tags object
param partitions int

var priorities = [ 'high', 'normal', 'low' ]
var workQueues = flatten(map(priorities, p => map(range(0, partitions), i => 'work-${p}-${i}')))
var queues = concat(workQueues, map(workQueues, q => '${q}-poison'), [ 'results' ])

resource account 'Microsoft.Storage/storageAccounts@2025-01-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    accessTier: 'Hot'
    minimumTlsVersion: 'TLS1_2'
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false // identities only: no keys to leak
    supportsHttpsTrafficOnly: true
    defaultToOAuthAuthentication: true
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2025-01-01' = {
  parent: account
  name: 'default'
}

resource containers 'Microsoft.Storage/storageAccounts/blobServices/containers@2025-01-01' = [
  for c in [ 'payloads', 'results', 'control', 'incoming' ]: {
    parent: blobService
    name: c
    properties: { publicAccess: 'None' }
  }
]

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2025-01-01' = {
  parent: account
  name: 'default'
}

resource queueResources 'Microsoft.Storage/storageAccounts/queueServices/queues@2025-01-01' = [
  for q in queues: {
    parent: queueService
    name: q
  }
]

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2025-01-01' = {
  parent: account
  name: 'default'
}

resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2025-01-01' = [
  for t in [ 'batches', 'chunks', 'processors' ]: {
    parent: tableService
    name: t
  }
]

output name string = account.name
output blobEndpoint string = account.properties.primaryEndpoints.blob
